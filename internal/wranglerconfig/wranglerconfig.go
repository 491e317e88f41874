// Package wranglerconfig reads the project's wrangler.jsonc for tests that
// keep the code and the deployment configuration in step.
package wranglerconfig

import (
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

// Env is the part of a wrangler environment the tests compare with the code.
type Env struct {
	Queues struct {
		Producers []struct {
			Binding string `json:"binding"`
			Queue   string `json:"queue"`
		} `json:"producers"`
		Consumers []Consumer `json:"consumers"`
	} `json:"queues"`
	Triggers struct {
		Crons []string `json:"crons"`
	} `json:"triggers"`
	Vars map[string]string `json:"vars"`
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
	var c Config
	src, err := os.ReadFile(filepath.Join(root, "wrangler.jsonc"))
	if err != nil {
		return c, err
	}
	std, err := hujson.Standardize(src)
	if err != nil {
		return c, fmt.Errorf("wrangler.jsonc: %w", err)
	}
	if err := json.Unmarshal(std, &c); err != nil {
		return c, fmt.Errorf("wrangler.jsonc: %w", err)
	}
	return c, nil
}

// All returns every environment by name ("" is the top level).
func (c Config) All() map[string]Env {
	out := map[string]Env{"": c.Env}
	for name, e := range c.Envs {
		out[name] = e
	}
	return out
}
