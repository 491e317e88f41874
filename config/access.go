package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redrive/redrive/access/cfaccess"
	"github.com/redrive/redrive/outbound"
)

// access reads ACCESS_TEAM_DOMAIN, ACCESS_AUD, ACCESS_CERTS_URL and
// ACCESS_ROLES. Access is on only with both of the first two; a bad value
// turns it off (or keeps no rule) and is a problem, so that a typo never
// signs anyone in.
func (l *loader) access() Access {
	a := Access{TeamDomain: l.str("ACCESS_TEAM_DOMAIN", ""), Audience: l.str("ACCESS_AUD", ""), CertsURL: l.str("ACCESS_CERTS_URL", "")}
	roles := l.str("ACCESS_ROLES", "")
	switch {
	case a.TeamDomain == "" && a.Audience == "":
		return Access{}
	case a.TeamDomain == "" || a.Audience == "":
		l.problems = append(l.problems, errors.New("ACCESS_TEAM_DOMAIN and ACCESS_AUD go together: Cloudflare Access sign-in is off"))
		return Access{}
	}
	team := a.TeamDomain
	if !strings.Contains(team, "://") {
		team = "https://" + team
	}
	for _, u := range []struct{ name, url string }{{"ACCESS_TEAM_DOMAIN", team}, {"ACCESS_CERTS_URL", a.CertsURL}} {
		if u.url == "" {
			continue
		}
		// The keys that sign every identity are fetched there: never over a network in clear.
		if err := outbound.CheckURL(u.url); err != nil {
			l.problems = append(l.problems, fmt.Errorf("%s: %v; Cloudflare Access sign-in is off", u.name, err))
			return Access{}
		}
	}
	rules, err := cfaccess.ParseRules(roles)
	if err != nil {
		l.problems = append(l.problems, fmt.Errorf("%v (ACCESS_ROLES); nobody signed in through Access gets a role", err))
		return a
	}
	a.Roles = rules
	return a
}

// checkAccessPipelines reports ACCESS_ROLES rules naming a pipeline that is
// not configured (their identities then reach none of it).
func checkAccessPipelines(a Access, ps []Pipeline) []error {
	if len(ps) == 0 {
		ps = []Pipeline{BeerPipeline()}
	}
	var out []error
	for i, r := range a.Roles {
		for _, name := range r.Pipelines {
			if !slices.ContainsFunc(ps, func(p Pipeline) bool { return p.Name == name }) {
				out = append(out, fmt.Errorf("ACCESS_ROLES[%d]: pipeline %q is not configured (PIPELINES)", i, name))
			}
		}
	}
	return out
}
