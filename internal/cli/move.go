package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
)

// Moving a pipeline to its own database (docs/operations.md "Move a
// pipeline to its own database"): import, then release.

func (a *app) importCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE",
		Short: "Import exported rows (export --include-raw --status all) into their pipeline's database",
		Long: `import sends FILE (NDJSON as "redrive export --include-raw" writes it; - for stdin)
in requests of at most 500 lines and 1 MB. Rows already in the database are
skipped, so an interrupted import is run again as it was.`,
		Example: `  redrive export --include-raw --status all --pipeline tickets --database DB -o tickets.ndjson
  redrive import tickets.ndjson`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error { return a.importRows(cmd.Context(), argv[0]) },
	}
}

func (a *app) importRows(ctx context.Context, file string) error {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(a.env.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	res, err := c.ImportAll(ctx, data, func(r client.ImportResult) {
		fmt.Fprintf(a.env.Stderr, "\rimported %d, skipped %d of %d lines", r.Imported, r.Skipped, r.Lines)
	})
	fmt.Fprintln(a.env.Stderr)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(res)
	}
	fmt.Fprintf(a.env.Stdout, "%d lines: %d imported into %s, %d already there\n", res.Lines, res.Imported, res.Database, res.Skipped)
	return nil
}

func (a *app) releaseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "release PIPELINE DATABASE",
		Short: "Delete from DATABASE the pipeline's rows its own database holds (after an import)",
		Long: `release deletes, window by window, the pipeline's rows in DATABASE (a D1
binding that is not the pipeline's own) whose copy (same id and message id)
its own database holds. Rows without a copy are never deleted: they are
reported as not imported.`,
		Example: `  redrive release tickets DB`,
		Args:    args(cobra.ExactArgs(2)),
		RunE:    func(cmd *cobra.Command, argv []string) error { return a.release(cmd.Context(), argv[0], argv[1]) },
	}
}

func (a *app) release(ctx context.Context, pipeline, database string) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	res, err := c.ReleaseAll(ctx, pipeline, database, func(r client.ReleaseResult) {
		fmt.Fprintf(a.env.Stderr, "\rreleased %d, not imported %d", r.Released, r.NotImported)
	})
	fmt.Fprintln(a.env.Stderr)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(res)
	}
	fmt.Fprintf(a.env.Stdout, "%d rows released from %s (their copies are in %s), %d not imported, %d changed since their copy, %d left by its counts\n",
		res.Released, res.Database, res.Into, res.NotImported, res.Changed, res.Remaining)
	return nil
}
