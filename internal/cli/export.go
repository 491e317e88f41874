package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/client"
	"github.com/redrive/redrive/internal/promtext"
)

// exportFlags are export's flags.
type exportFlags struct {
	filter                   filterFlags
	format, output, database string
	limit                    int
	raw                      bool
}

func (a *app) exportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export every matching row as NDJSON or CSV, to stdout or a file",
		Long: `export follows the export's continuation cursor until every matching row is
written, and reports progress on stderr. --json is --format ndjson.`,
		Example: `  redrive export --format csv --source-queue beer-enrichment -o dlq.csv
  redrive export --status all --q Lagunitas > dlq.ndjson`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.export(cmd.Context(), &f) },
	}
	f.filter.register(cmd.Flags(), "pending (default), replaying, replayed, acknowledged or all")
	cmd.Flags().StringVar(&f.format, "format", "ndjson", "ndjson or csv")
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "write to this file (mode 0600) instead of stdout")
	cmd.Flags().IntVar(&f.limit, "limit", 0, "rows per page the server reads (default 100)")
	cmd.Flags().BoolVar(&f.raw, "include-raw", false, "include raw_message and raw_encoding (with ndjson, also what redrive import needs)")
	cmd.Flags().StringVar(&f.database, "database", "", "read this D1 binding instead of the shared one (the old database of a pipeline being moved)")
	return cmd
}

func (a *app) export(ctx context.Context, f *exportFlags) error {
	if a.json {
		f.format = "ndjson"
	}
	if f.format != "ndjson" && f.format != "csv" {
		return usagef("--format must be ndjson or csv")
	}
	p, err := f.params()
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	var w io.Writer = a.env.Stdout
	var file *os.File
	if f.output != "" && f.output != "-" {
		if file, err = os.OpenFile(f.output, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return err
		}
		defer file.Close()
		w = file
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	rows, err := c.ExportAll(ctx, p, bw, func(rows int) {
		fmt.Fprintf(a.env.Stderr, "\rexported %d rows", rows)
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	fmt.Fprintf(a.env.Stderr, "\rexported %d rows\n", rows)
	if err != nil && rows > 0 {
		return partialError{fmt.Errorf("export cut short after %d rows: %w", rows, err)}
	}
	return err
}

// params are GET /admin/dlq/export's parameters.
func (f *exportFlags) params() (client.ExportDLQParams, error) {
	lp, err := f.filter.listParams()
	if err != nil {
		return client.ExportDLQParams{}, err
	}
	fm := client.ExportDLQParamsFormat(f.format)
	p := client.ExportDLQParams{Format: &fm, Pipeline: lp.Pipeline, BeerId: lp.BeerId, SourceQueue: lp.SourceQueue, Q: lp.Q,
		Signature: lp.Signature, Version: lp.Version, VersionNot: lp.VersionNot, FailedAfter: lp.FailedAfter, FailedBefore: lp.FailedBefore}
	if f.filter.status != "" {
		s := client.ExportDLQParamsStatus(f.filter.status)
		p.Status = &s
	}
	if f.raw {
		p.IncludeRaw = &f.raw
	}
	if f.database != "" {
		p.Database = &f.database
	}
	if f.limit > 0 {
		p.Limit = &f.limit
	}
	return p, nil
}

func (a *app) healthCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "health",
		Short:   "The worker's health: D1 reachable, and with credentials its version (exit 1 when unhealthy)",
		Example: "  redrive health",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.health(cmd.Context()) },
	}
}

func (a *app) health(ctx context.Context) error {
	// Without credentials the worker tells the status alone; with
	// them, also the version, the time and D1's latency.
	url, creds, err := a.credentials(false)
	if err != nil {
		return err
	}
	opts := []client.ClientOption{client.WithHTTPClient(a.env.HTTP)}
	if complete(creds) {
		opts = append(opts, client.WithCredentials(creds))
	}
	c, err := client.NewClientWithResponses(url, opts...)
	if err != nil {
		return err
	}
	var h struct {
		Status  string `json:"status"`
		Version string `json:"version"`
		Time    string `json:"time"`
		D1      struct {
			OK        bool   `json:"ok"`
			LatencyMS int    `json:"latency_ms"`
			Error     string `json:"error"`
		} `json:"d1"`
	}
	data, err := into(&h)(c.Health(ctx))
	if err != nil {
		return err
	}
	if a.json {
		if err := a.printJSON(data); err != nil {
			return err
		}
	} else {
		t := newTable(a.env.Stdout, "STATUS", "VERSION", "D1", "D1 LATENCY (ms)", "TIME")
		t.row(h.Status, h.Version, h.D1.OK, h.D1.LatencyMS, h.Time)
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) metricsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "metrics",
		Short: "The Prometheus metrics page (--json: its samples as an object)",
		Example: `  redrive metrics | grep redrive_dlq_messages
  redrive metrics --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.metrics(cmd.Context()) },
	}
}

func (a *app) metrics(ctx context.Context) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	resp, err := c.Metrics(ctx)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		_, err := client.Data(resp.StatusCode, body)
		return err
	}
	if !a.json {
		_, err := a.env.Stdout.Write(body)
		return err
	}
	e, err := promtext.Parse(string(body))
	if err != nil {
		return fmt.Errorf("metrics page: %w", err)
	}
	keys := make([]string, 0, len(e.Samples))
	for k := range e.Samples {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]float64, len(keys))
	for _, k := range keys {
		out[k] = e.Samples[k]
	}
	enc := json.NewEncoder(a.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
