package config

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// .dev.vars.example, what `make dev` copies to .dev.vars, loads without a
// problem: every channel of its ALERT_CHANNELS is on, Access is on.
func TestDevVarsExampleLoads(t *testing.T) {
	f, err := os.Open("../.dev.vars.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("not NAME=value: %q", line)
		}
		env[k] = v
	}
	c, problems := Load(func(k string) string { return env[k] })
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	if len(c.AlertChannels) != 2 || c.AlertChannels[0].Type != "pagerduty" || c.AlertChannels[1].Secret == "" || !c.Access.On() {
		t.Fatalf("channels %+v, access %v", c.AlertChannels, c.Access.On())
	}
}
