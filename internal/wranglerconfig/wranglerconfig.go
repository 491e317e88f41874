// Package wranglerconfig reads the project's wrangler.jsonc for tests that
// keep the code and the deployment configuration in step.
package wranglerconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tailscale/hujson"
)

// Consumer is one queue consumer of an environment.
type Consumer struct {
	Queue           string `json:"queue"`
	MaxRetries      *int   `json:"max_retries"`
	DeadLetterQueue string `json:"dead_letter_queue"`
}

// D1Database is one D1 binding of an environment.
type D1Database struct {
	Binding       string `json:"binding"`
	DatabaseName  string `json:"database_name"`
	DatabaseID    string `json:"database_id"`
	MigrationsDir string `json:"migrations_dir"`
}

// Env is the part of a wrangler environment the tests (and cmd/migrate)
// compare with the code.
type Env struct {
	D1Databases []D1Database `json:"d1_databases"`
	Queues      struct {
		Producers []struct {
			Binding string `json:"binding"`
			Queue   string `json:"queue"`
		} `json:"producers"`
		Consumers []Consumer `json:"consumers"`
	} `json:"queues"`
	Triggers struct {
		Crons []string `json:"crons"`
	} `json:"triggers"`
	Vars Vars `json:"vars"`
}

// Vars are an environment's vars as the worker reads them (platform.Getenv):
// a string as it is, any other JSON value (PIPELINES written as an array)
// as its compact JSON text, as JSON.stringify gives it.
type Vars map[string]string

// UnmarshalJSON reads a vars object whose values are strings or any JSON.
func (v *Vars) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := Vars{}
	for name, value := range raw {
		var s string
		if err := json.Unmarshal(value, &s); err == nil {
			out[name] = s
			continue
		}
		var text bytes.Buffer
		if err := json.Compact(&text, value); err != nil {
			return fmt.Errorf("var %s: %w", name, err)
		}
		out[name] = text.String()
	}
	*v = out
	return nil
}

// Config is wrangler.jsonc: the top-level environment and the named ones.
type Config struct {
	Env
	Envs map[string]Env `json:"env"`
}

// Consumer returns the environment's consumer of queue.
func (e Env) Consumer(queue string) (Consumer, bool) {
	for _, c := range e.Queues.Consumers {
		if c.Queue == queue {
			return c, true
		}
	}
	return Consumer{}, false
}

// Load reads root/wrangler.jsonc (JSON with comments and trailing commas).
func Load(root string) (Config, error) {
	return LoadFile(filepath.Join(root, "wrangler.jsonc"))
}

// LoadFile reads the wrangler configuration at path (JSONC).
func LoadFile(path string) (Config, error) {
	var c Config
	src, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	name := filepath.Base(path)
	std, err := hujson.Standardize(src)
	if err != nil {
		return c, fmt.Errorf("%s: %w", name, err)
	}
	if err := json.Unmarshal(std, &c); err != nil {
		return c, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// Environment returns the environment named name ("" is the top level).
func (c Config) Environment(name string) (Env, error) {
	if name == "" {
		return c.Env, nil
	}
	e, ok := c.Envs[name]
	if !ok {
		return Env{}, fmt.Errorf("wrangler.jsonc: no environment %q", name)
	}
	return e, nil
}

// CheckDeployable returns why environment name ("" is the top level) must
// not be deployed, or nil: DEV_ROUTES among its vars (any value) would
// open POST /__dev/send, /__dev/sql and /__dev/cron in production.
// (Wrangler's vars are not inherited: each environment has its own.)
func (c Config) CheckDeployable(name string) error {
	e, err := c.Environment(name)
	if err != nil {
		return err
	}
	if v, ok := e.Vars["DEV_ROUTES"]; ok {
		where := "the top level"
		if name != "" {
			where = "environment " + name
		}
		return fmt.Errorf("wrangler.jsonc: %s sets DEV_ROUTES (%q): the /__dev/* routes (send to any queue, run SQL, run crons) are for local runs and the e2e tests; remove it before deploying", where, v)
	}
	return nil
}

// D1Bindings are the environment's D1 bindings in the order
// wrangler.jsonc lists them.
func (e Env) D1Bindings() []string {
	var out []string
	for _, d := range e.D1Databases {
		out = append(out, d.Binding)
	}
	return out
}

// All returns every environment by name ("" is the top level).
func (c Config) All() map[string]Env {
	out := map[string]Env{"": c.Env}
	for name, e := range c.Envs {
		out[name] = e
	}
	return out
}
