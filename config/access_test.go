package config

import (
	"strings"
	"testing"
)

// Access is on with its team and audience; a value that could sign anyone
// in wrongly turns it off (or keeps no rule) and is a problem.
func TestAccessConfig(t *testing.T) {
	for _, c := range []struct {
		vars    map[string]string
		on      bool
		rules   int
		problem string
	}{
		{map[string]string{}, false, 0, ""},
		{map[string]string{"ACCESS_TEAM_DOMAIN": "team.cloudflareaccess.com", "ACCESS_AUD": "aud",
			"ACCESS_ROLES": `[{"email":"a@example.com","role":"admin"}]`}, true, 1, ""},
		{map[string]string{"ACCESS_TEAM_DOMAIN": "team.cloudflareaccess.com"}, false, 0, "go together"},
		{map[string]string{"ACCESS_AUD": "aud"}, false, 0, "go together"},
		{map[string]string{"ACCESS_TEAM_DOMAIN": "http://team.example.com", "ACCESS_AUD": "aud"}, false, 0, "ACCESS_TEAM_DOMAIN"},
		{map[string]string{"ACCESS_TEAM_DOMAIN": "http://127.0.0.1:8789", "ACCESS_AUD": "aud"}, true, 0, ""},
		{map[string]string{"ACCESS_TEAM_DOMAIN": "team.example.com", "ACCESS_AUD": "aud", "ACCESS_CERTS_URL": "http://10.0.0.1/certs"}, false, 0, "ACCESS_CERTS_URL"},
		{map[string]string{"ACCESS_TEAM_DOMAIN": "team.example.com", "ACCESS_AUD": "aud", "ACCESS_ROLES": `[{"email":"a@example.com","role":"root"}]`}, true, 0, "nobody"},
		{map[string]string{"ACCESS_TEAM_DOMAIN": "team.example.com", "ACCESS_AUD": "aud",
			"ACCESS_ROLES": `[{"email":"a@example.com","role":"viewer","pipelines":["nope"]}]`}, true, 1, `pipeline "nope" is not configured`},
	} {
		cfg, problems := Load(func(k string) string { return c.vars[k] })
		var text []string
		for _, p := range problems {
			text = append(text, p.Error())
		}
		all := strings.Join(text, "\n")
		if cfg.Access.On() != c.on || len(cfg.Access.Roles) != c.rules || (c.problem == "") != !strings.Contains(all, "ACCESS") ||
			c.problem != "" && !strings.Contains(all, c.problem) {
			t.Errorf("%v: on %v, %d rules, problems %q", c.vars, cfg.Access.On(), len(cfg.Access.Roles), all)
		}
	}
}
