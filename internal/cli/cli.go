// Package cli is the redrive command-line tool (cmd/redrive): list,
// inspect, replay, acknowledge, edit, run replay tasks, export, read the
// audit log and follow new failures from a terminal. It drives the admin
// API through the public client package; Main runs it with its standard
// streams, environment and HTTP client given, so tests run it in-process.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
	"github.com/redrive/redrive/outbound"
)

// Exit codes of the redrive command.
const (
	ExitOK      = 0 // the command did what it was asked
	ExitFailure = 1 // it failed (the API refused the request, a network error, declined confirmation)
	ExitUsage   = 2 // wrong flags or arguments
	ExitAuth    = 3 // no credentials, an unsafe profile file, or the API refused them (401, 403)
	ExitPartial = 4 // part of the work was done: rows skipped or whose send failed, an export cut short
)

// Env is what the command reads and writes besides its arguments.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (REDRIVE_*, EDITOR).
	Getenv func(string) string
	// HTTP sends the requests (nil: a client that follows no redirect,
	// NoRedirects).
	HTTP client.HttpRequestDoer
	// Poll is the default interval of tasks watch and tail (0: 2s).
	Poll time.Duration
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

type usageError struct{ error }
type authError struct{ error }
type partialError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// ExitCode maps an error of a command to its exit code.
func ExitCode(err error) int {
	var u usageError
	var a authError
	var p partialError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &u):
		return ExitUsage
	case errors.As(err, &a), client.IsAuth(err):
		return ExitAuth
	case errors.As(err, &p):
		return ExitPartial
	}
	return ExitFailure
}

// Main runs the command line args (without the program name) and returns
// its exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.HTTP == nil {
		env.HTTP = NoRedirects()
	}
	if env.Poll == 0 {
		env.Poll = 2 * time.Second
	}
	app := &app{env: env}
	root := app.root()
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown shorthand") {
			err = usageError{err}
		}
		fmt.Fprintln(env.Stderr, "redrive:", err)
	}
	return ExitCode(err)
}

type app struct {
	env     Env
	json    bool
	profile string
	c       *client.ClientWithResponses
}

const rootLong = `redrive drives a redrive worker's admin API: its dead-letter rows, replays,
replay tasks, exports and audit log.

Credentials are never command-line arguments. They come from the environment:

  REDRIVE_URL            the worker, e.g. https://redrive.example.workers.dev
                         (https://; http:// only to 127.0.0.0/8, ::1 or localhost;
                         the worker never redirects, so no redirect is followed)
  REDRIVE_TOKEN          a named key (rdk_…), sent as Authorization: Bearer
  REDRIVE_API_KEY        or the pair: sent as X-API-Key
  REDRIVE_ADMIN_SECRET   and as X-Admin-Secret

or from a profile in $REDRIVE_CONFIG (default: <user config dir>/redrive/config.json,
mode 0600 or stricter; a looser file is refused), chosen by --profile or
REDRIVE_PROFILE ("default" otherwise); the environment wins field by field:

  {"default": {"url": "...", "token": "rdk_..."}}
  {"ops": {"url": "...", "api_key": "...", "admin_secret": "..."}}

Every command prints a table, or the API's data as JSON with --json.

Exit codes: 0 ok, 1 failure, 2 usage, 3 auth (no or refused credentials, unsafe
profile file), 4 partial (some rows skipped or failed, an export cut short).`

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Version:       buildVersion(),
		Use:           "redrive",
		Short:         "Inspect, replay and export a redrive worker's dead-letter queue",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print JSON (the API's data) instead of a table")
	root.PersistentFlags().StringVar(&a.profile, "profile", "", "profile of the config file (default $REDRIVE_PROFILE or \"default\")")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddGroup(&cobra.Group{ID: "rows", Title: "Dead-letter rows:"}, &cobra.Group{ID: "ops", Title: "Operations:"})
	for _, c := range []*cobra.Command{a.lsCmd(), a.showCmd(), a.statsCmd(), a.groupsCmd(), a.pipelinesCmd(), a.auditCmd(), a.tailCmd()} {
		c.GroupID = "rows"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{a.replayCmd(), a.ackCmd(), a.editCmd(), a.tasksCmd(), a.exportCmd(), a.importCmd(), a.releaseCmd(), a.keysCmd(), a.whoamiCmd(), a.healthCmd(), a.metricsCmd()} {
		c.GroupID = "ops"
		root.AddCommand(c)
	}
	return root
}

// args checks a command's positional arguments as a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// profileConfig is one profile of the config file.
type profileConfig struct {
	URL         string `json:"url"`
	Token       string `json:"token"`
	APIKey      string `json:"api_key"`
	AdminSecret string `json:"admin_secret"`
}

// credentials reads the URL and secrets: the environment, then the profile.
func (a *app) credentials(needSecrets bool) (string, client.Credentials, error) {
	get := a.env.Getenv
	url := get("REDRIVE_URL")
	creds := client.Credentials{Token: get("REDRIVE_TOKEN"), APIKey: get("REDRIVE_API_KEY"), AdminSecret: get("REDRIVE_ADMIN_SECRET")}
	if url == "" || (needSecrets && !complete(creds)) || a.profile != "" {
		p, err := a.readProfile()
		if err != nil {
			return "", creds, err
		}
		url = first(url, p.URL)
		creds.Token = first(creds.Token, p.Token)
		creds.APIKey = first(creds.APIKey, p.APIKey)
		creds.AdminSecret = first(creds.AdminSecret, p.AdminSecret)
	}
	if url == "" {
		return "", creds, authError{errors.New("no worker URL: set REDRIVE_URL or a profile's url (redrive --help)")}
	}
	if needSecrets && !complete(creds) {
		return "", creds, authError{errors.New("no credentials: set REDRIVE_TOKEN, or REDRIVE_API_KEY and REDRIVE_ADMIN_SECRET, or a profile (redrive --help)")}
	}
	if err := outbound.CheckURL(url); err != nil {
		return "", creds, authError{fmt.Errorf("worker URL: %w; the admin credentials are not sent over plain http", err)}
	}
	return strings.TrimRight(url, "/"), creds, nil
}

// complete reports whether creds can authenticate: a named key, or both
// secrets of the pair.
func complete(creds client.Credentials) bool {
	return creds.Token != "" || (creds.APIKey != "" && creds.AdminSecret != "")
}

// NoRedirects is the CLI's HTTP client: it follows no redirect. The worker
// never answers one, so a 3xx comes from something else (a proxy, a
// hijacked or mistyped host) and following it would send the admin pair
// there: Go's client forwards X-API-Key and X-Admin-Secret to another
// host, even from https:// to http://. The request fails instead, naming
// where the redirect pointed.
func NoRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		status := 0
		if req.Response != nil {
			status = req.Response.StatusCode
		}
		return fmt.Errorf("the worker never redirects, but this answer (%d) points to %s://%s; redrive follows no redirect: check REDRIVE_URL",
			status, req.URL.Scheme, req.URL.Host)
	}}
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readProfile reads the chosen profile; a missing file is an empty profile
// unless a profile was named.
func (a *app) readProfile() (profileConfig, error) {
	name := first(a.profile, first(a.env.Getenv("REDRIVE_PROFILE"), "default"))
	path := a.env.Getenv("REDRIVE_CONFIG")
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return profileConfig{}, nil
		}
		path = filepath.Join(dir, "redrive", "config.json")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && a.profile == "" && a.env.Getenv("REDRIVE_PROFILE") == "" {
		return profileConfig{}, nil
	}
	if err != nil {
		return profileConfig{}, authError{fmt.Errorf("profile file: %w", err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return profileConfig{}, authError{fmt.Errorf("profile file: %w", err)}
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return profileConfig{}, authError{fmt.Errorf("profile file %s has mode %04o: it holds secrets, make it 0600 (chmod 600 %s)", path, st.Mode().Perm(), path)}
	}
	var profiles map[string]profileConfig
	dec := json.NewDecoder(io.LimitReader(f, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&profiles); err != nil {
		return profileConfig{}, authError{fmt.Errorf("profile file %s: %w", path, err)}
	}
	p, ok := profiles[name]
	if !ok {
		return profileConfig{}, authError{fmt.Errorf("profile file %s has no profile %q", path, name)}
	}
	return p, nil
}

// api returns the client, reading the credentials on first use.
func (a *app) api() (*client.ClientWithResponses, error) {
	if a.c != nil {
		return a.c, nil
	}
	url, creds, err := a.credentials(true)
	if err != nil {
		return nil, err
	}
	a.c, err = client.New(url, creds, client.WithHTTPClient(a.env.HTTP),
		client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("User-Agent", "redrive-cli")
			return nil
		}))
	return a.c, err
}

// into reads an answer's envelope: its data (raw) and, when v is not nil,
// v decoded from it; an error envelope is a *client.APIError.
func into(v any) func(*http.Response, error) (json.RawMessage, error) {
	return func(resp *http.Response, err error) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
		data, err := client.Data(resp.StatusCode, body)
		if err != nil {
			return nil, err
		}
		if v != nil {
			if err := json.Unmarshal(data, v); err != nil {
				return nil, fmt.Errorf("decode response: %w", err)
			}
		}
		return data, nil
	}
}

// printJSON writes v (a json.RawMessage or any value) indented.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.env.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if raw, ok := v.(json.RawMessage); ok {
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			return err
		}
		v = x
	}
	return enc.Encode(v)
}

// editFile runs $VISUAL or $EDITOR (vi without either) on path.
func (a *app) editFile(ctx context.Context, path string) error {
	editor := first(a.env.Getenv("VISUAL"), first(a.env.Getenv("EDITOR"), "vi"))
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.env.Stdin, a.env.Stderr, a.env.Stderr
	if f, ok := a.env.Stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", editor, err)
	}
	return nil
}

// buildVersion is the module version go install built (devel otherwise).
func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "devel"
}
