package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
)

func (a *app) keysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Named API keys with a role (create, ls, revoke)",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.keyCreateCmd(), a.keyListCmd(), a.keyRevokeCmd())
	return cmd
}

func (a *app) keyCreateCmd() *cobra.Command {
	var name, role string
	var pipelines []string
	var expires time.Duration
	cmd := &cobra.Command{
		Use:     "create",
		Short:   "Create a key; its token is printed this once",
		Example: "  redrive keys create --name oncall-alice --role viewer --expires 720h\n  redrive keys create --name orders-bot --role operator --pipelines orders",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			body := client.CreateKeyJSONRequestBody{Name: name, Role: client.CreateKeyJSONBodyRole(role)}
			if len(pipelines) > 0 {
				body.Pipelines = &pipelines
			}
			if expires > 0 {
				at := int(time.Now().Add(expires).UnixMilli())
				body.ExpiresAt = &at
			}
			return a.keyCall(func(ctx context.Context, c *client.ClientWithResponses) (json.RawMessage, error) {
				return into(nil)(c.CreateKey(ctx, body))
			})(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the key's name (a-z, 0-9, . _ -)")
	cmd.Flags().StringVar(&role, "role", "", "reporter, viewer, operator or admin")
	cmd.Flags().DurationVar(&expires, "expires", 0, "how long the key works (0: until revoked)")
	cmd.Flags().StringSliceVar(&pipelines, "pipelines", nil, "limit the key to these pipelines (comma-separated; default: every pipeline)")
	return cmd
}

func (a *app) keyListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Short:   "List the keys, revoked ones too (never a secret)",
		Example: "  redrive keys ls",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.keyCall(func(ctx context.Context, c *client.ClientWithResponses) (json.RawMessage, error) {
				return into(nil)(c.ListKeys(ctx))
			})(cmd.Context())
		},
	}
}

func (a *app) keyRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "revoke ID",
		Short:   "Revoke a key (at once here, within 30 s in every isolate)",
		Example: "  redrive keys revoke 3f0c9a4e0b2d4c1f",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.keyCall(func(ctx context.Context, c *client.ClientWithResponses) (json.RawMessage, error) {
				return into(nil)(c.RevokeKey(ctx, argv[0], client.RevokeKeyJSONRequestBody{}))
			})(cmd.Context())
		},
	}
}

// keyCall runs call and prints its data: as JSON, or as a table of keys
// (with the token of a key just created).
func (a *app) keyCall(call func(context.Context, *client.ClientWithResponses) (json.RawMessage, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := a.api()
		if err != nil {
			return err
		}
		data, err := call(ctx, c)
		if err != nil {
			return err
		}
		if a.json {
			return a.printJSON(data)
		}
		// A list, or one key (with its token when just created).
		var keys []client.CreatedApiKey
		var list struct {
			Keys []client.CreatedApiKey `json:"keys"`
		}
		if json.Unmarshal(data, &list) == nil && list.Keys != nil {
			keys = list.Keys
		} else {
			var one client.CreatedApiKey
			if err := json.Unmarshal(data, &one); err != nil {
				return err
			}
			keys = []client.CreatedApiKey{one}
		}
		return a.showKeys(keys)
	}
}

func (a *app) showKeys(keys []client.CreatedApiKey) error {
	t := newTable(a.env.Stdout, "ID", "NAME", "ROLE", "PIPELINES", "CREATED BY", "CREATED", "EXPIRES", "REVOKED", "LAST USED")
	at := func(p *int) any { // the generated client's times are ints
		if p == nil {
			return nil
		}
		return ms(*p)
	}
	for _, k := range keys {
		scope := "all"
		if k.Pipelines != nil {
			scope = strings.Join(*k.Pipelines, ",")
		}
		t.row(k.Id, k.Name, string(k.Role), scope, k.CreatedBy, ms(k.CreatedAt), at(k.ExpiresAt), at(k.RevokedAt), at(k.LastUsedAt))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(keys) == 1 && keys[0].Token != "" {
		_, err := fmt.Fprintf(a.env.Stdout, "\ntoken (shown this once; send it as Authorization: Bearer, or set REDRIVE_TOKEN):\n%s\n", keys[0].Token)
		return err
	}
	return nil
}

func (a *app) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "whoami",
		Short:   "Who the credential is: principal, role, pipelines and permissions",
		Example: "  redrive whoami",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var me client.Whoami
			data, err := into(&me)(c.Whoami(cmd.Context()))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(data)
			}
			scope := "every pipeline"
			if me.Pipelines != nil {
				scope = strings.Join(*me.Pipelines, ", ")
			}
			t := newTable(a.env.Stdout, "PRINCIPAL", "ROLE", "PIPELINES", "PERMISSIONS")
			perms := make([]string, len(me.Permissions))
			for i, p := range me.Permissions {
				perms[i] = string(p)
			}
			t.row(me.Principal, string(me.Role), scope, strings.Join(perms, " "))
			return t.flush()
		},
	}
}
