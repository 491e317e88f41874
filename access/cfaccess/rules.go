package cfaccess

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/redrive/redrive/access"
	"github.com/redrive/redrive/internal/strictjson"
)

// MaxRules is the most rules ACCESS_ROLES may hold.
const MaxRules = 100

// MaxRulesBytes is the longest ACCESS_ROLES may be.
const MaxRulesBytes = 64 << 10

// maxRulePipelines bounds the pipelines one rule names.
const maxRulePipelines = 100

// Rule gives a role to the identities it matches: one email address, every
// address of one domain, or one group of the token's groups claim.
type Rule struct {
	// Email matches this address, compared case-insensitively.
	Email string `json:"email,omitempty"`
	// EmailDomain matches every address of this domain (example.com; not
	// its subdomains), compared case-insensitively.
	EmailDomain string `json:"email_domain,omitempty"`
	// Group matches an identity whose groups hold exactly this name.
	Group string `json:"group,omitempty"`
	// Role is the role given: viewer, operator, admin or reporter.
	Role string `json:"role"`
	// Pipelines, when set, are the pipelines the role is given for; none
	// means every pipeline.
	Pipelines []string `json:"pipelines,omitempty"`
}

// Rules are ACCESS_ROLES: the first rule that matches an identity gives
// its role.
type Rules []Rule

// ParseRules reads ACCESS_ROLES, a JSON array of rules: at most MaxRules
// of them in at most MaxRulesBytes; each names exactly one of email,
// email_domain and group, and a role; a field no Rule has is refused. An
// empty (or blank) value is no rules.
func ParseRules(s string) (Rules, error) {
	if len(s) > MaxRulesBytes {
		return nil, fmt.Errorf("ACCESS_ROLES is over %d bytes", MaxRulesBytes)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if s[0] != '[' {
		return nil, fmt.Errorf("ACCESS_ROLES must be a JSON array of rules")
	}
	var rs Rules
	if err := strictjson.Decode([]byte(s), &rs, "the value"); err != nil {
		return nil, fmt.Errorf("ACCESS_ROLES: %v", err)
	}
	if len(rs) > MaxRules {
		return nil, fmt.Errorf("ACCESS_ROLES has %d rules, over %d", len(rs), MaxRules)
	}
	for i := range rs {
		if err := rs[i].validate(); err != nil {
			return nil, fmt.Errorf("ACCESS_ROLES rule %d: %v", i+1, err)
		}
	}
	return rs, nil
}

// validate checks r and lowers its email and domain.
func (r *Rule) validate() error {
	n := 0
	for _, f := range []string{r.Email, r.EmailDomain, r.Group} {
		if f != "" {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("name exactly one of email, email_domain and group")
	}
	r.Email, r.EmailDomain = strings.ToLower(r.Email), strings.ToLower(r.EmailDomain)
	switch {
	case r.Email != "" && !validEmail(r.Email):
		return fmt.Errorf("email must be one address (name@domain)")
	case r.EmailDomain != "" && !validDomain(r.EmailDomain):
		return fmt.Errorf("email_domain must be a domain (example.com), without @")
	case r.Group != "" && (strings.TrimSpace(r.Group) != r.Group || strings.ContainsFunc(r.Group, unicode.IsControl)):
		return fmt.Errorf("group must not start or end with a blank or hold a control character")
	}
	if _, err := access.ParseRole(r.Role); err != nil {
		return err
	}
	if len(r.Pipelines) > maxRulePipelines {
		return fmt.Errorf("at most %d pipelines", maxRulePipelines)
	}
	for i, p := range r.Pipelines {
		if !validPipelineName(p) {
			return fmt.Errorf("pipeline %q is not a pipeline name ([a-z][a-z0-9_-]{0,31})", p)
		}
		if slices.Contains(r.Pipelines[:i], p) {
			return fmt.Errorf("pipeline %q is named twice", p)
		}
	}
	return nil
}

// validEmail: one '@' with something printable and blank-free on each side.
func validEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && plain(local) && validDomain(domain)
}

// validDomain: a name without '@', blanks or control bytes, not starting
// or ending with a dot.
func validDomain(s string) bool {
	return s != "" && plain(s) && !strings.Contains(s, "@") && s[0] != '.' && s[len(s)-1] != '.'
}

// plain reports whether s has no blank, control or non-ASCII byte.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// validPipelineName: ^[a-z][a-z0-9_-]{0,31}$, as config names pipelines.
func validPipelineName(s string) bool {
	if len(s) == 0 || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Match returns the role and pipelines of the first rule that matches id;
// ok is false when none does (the identity gets no access).
func (rs Rules) Match(id Identity) (role string, pipelines []string, ok bool) {
	email := strings.ToLower(id.Email)
	_, domain, hasAt := strings.Cut(email, "@")
	for _, r := range rs {
		var hit bool
		switch {
		case r.Email != "":
			hit = email != "" && strings.EqualFold(r.Email, email)
		case r.EmailDomain != "":
			hit = hasAt && !strings.Contains(domain, "@") && strings.EqualFold(r.EmailDomain, domain)
		case r.Group != "":
			hit = slices.Contains(id.Groups, r.Group)
		}
		if hit {
			return r.Role, slices.Clone(r.Pipelines), true
		}
	}
	return "", nil, false
}
