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

// task is what the tables and the progress bar show of a Task.
type task struct {
	ID                int64   `json:"id"`
	State             string  `json:"state"`
	RatePerMinute     int     `json:"rate_per_minute"`
	Matched           int     `json:"matched"`
	Sent              int     `json:"sent"`
	SendFailed        int     `json:"send_failed"`
	Remaining         int     `json:"remaining"`
	EstimatedFinishAt *int64  `json:"estimated_finish_at"`
	CreatedAt         int64   `json:"created_at"`
	Destination       *string `json:"destination"`
}

func (a *app) tasksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Replay tasks: durable, paced bulk replays (create, ls, watch, pause, resume, cancel)",
		Args:  args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.taskCreateCmd(), a.taskListCmd(), a.taskWatchCmd())
	for _, action := range []string{"pause", "resume", "cancel"} {
		cmd.AddCommand(a.taskActionCmd(action))
	}
	return cmd
}

func (a *app) showTasks(raws ...json.RawMessage) error {
	t := newTable(a.env.Stdout, "ID", "STATE", "RATE/MIN", "MATCHED", "SENT", "FAILED", "REMAINING", "FINISH (est.)", "CREATED")
	for _, raw := range raws {
		var k task
		if err := json.Unmarshal(raw, &k); err != nil {
			return err
		}
		t.row(k.ID, k.State, k.RatePerMinute, k.Matched, k.Sent, k.SendFailed, k.Remaining, msp(k.EstimatedFinishAt), ms(k.CreatedAt))
	}
	return t.flush()
}

// taskFlags are tasks create's flags.
type taskFlags struct {
	filter                                 filterFlags
	rate, delay, canarySize, canaryObserve int
	canaryRatio                            float64
	destination                            string
	yes                                    bool
}

func (a *app) taskCreateCmd() *cobra.Command {
	var f taskFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a replay task for the pending rows matching the filter flags",
		Example: `  redrive tasks create --q Lagunitas --rate 120
  redrive tasks create --source-queue beer-enrichment --rate 60 --canary-size 5 --canary-min-ratio 0.8 --canary-observe 15`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.taskCreate(cmd.Context(), &f) },
	}
	f.filter.register(cmd.Flags(), "pending: tasks take pending rows only")
	cmd.Flags().IntVar(&f.rate, "rate", 0, "messages per minute (1..600, required)")
	cmd.Flags().IntVar(&f.delay, "delay", 0, "the first delivery this many seconds after creation")
	cmd.Flags().StringVar(&f.destination, "destination", "", "send to this queue instead of each row's source queue")
	cmd.Flags().IntVar(&f.canarySize, "canary-size", 0, "send this many rows first and judge them (1..100)")
	cmd.Flags().Float64Var(&f.canaryRatio, "canary-min-ratio", 0.8, "continue when at least this share of the canary succeeded")
	cmd.Flags().IntVar(&f.canaryObserve, "canary-observe", 15, "minutes a canary row must not fail again to count as succeeded")
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "do not show a dry run nor ask for confirmation")
	return cmd
}

func (a *app) taskCreate(ctx context.Context, f *taskFlags) error {
	if f.rate <= 0 {
		return usagef("--rate (messages per minute, 1..600) is required")
	}
	if f.filter.empty() {
		return usagef("name filter flags (--status pending selects every pending row)")
	}
	flt, err := f.filter.filter()
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	req := client.TaskRequest{Filter: flt, RatePerMinute: f.rate, Destination: opt(f.destination)}
	if f.delay > 0 {
		req.DelaySeconds = &f.delay
	}
	if f.canarySize > 0 {
		req.Canary = &client.Canary{Size: f.canarySize, MinSuccessRatio: float32(f.canaryRatio), ObserveMinutes: f.canaryObserve}
	}
	// A task is one request: the dry run and the question come first,
	// both skipped with --yes.
	if !f.yes {
		t := true
		_, p, err := dryRun(c.ReplayDLQ(ctx, client.ReplayRequest{Filter: flt, DryRun: &t}))
		if err != nil {
			return err
		}
		if err := a.printPreview(p, "replayed by the task", false); err != nil {
			return err
		}
		if err := a.confirm(fmt.Sprintf("Create a task replaying %d rows at %d/min?", p.MatchedCount, f.rate)); err != nil {
			return err
		}
	}
	return a.printTask(into(nil)(c.CreateReplayTask(ctx, req)))
}

// printTask prints a task answer's data (or its error).
func (a *app) printTask(data json.RawMessage, err error) error {
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(data)
	}
	return a.showTasks(data)
}

func (a *app) taskListCmd() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List replay tasks, newest first",
		Example: "  redrive tasks ls",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.taskList(cmd.Context(), limit) },
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "tasks to list")
	return cmd
}

func (a *app) taskList(ctx context.Context, limit int) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	p := &client.ListReplayTasksParams{}
	if limit > 0 {
		p.Limit = &limit
	}
	var l struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	data, err := into(&l)(c.ListReplayTasks(ctx, p))
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(data)
	}
	return a.showTasks(l.Tasks...)
}

func (a *app) taskActionCmd(action string) *cobra.Command {
	return &cobra.Command{
		Use:     action + " ID",
		Short:   strings.ToUpper(action[:1]) + action[1:] + " a replay task",
		Example: "  redrive tasks " + action + " 1",
		Args:    args(cobra.ExactArgs(1)),
		RunE:    func(cmd *cobra.Command, argv []string) error { return a.taskAction(cmd.Context(), action, argv[0]) },
	}
}

// taskAction pauses, resumes or cancels task arg.
func (a *app) taskAction(ctx context.Context, action, arg string) error {
	id, err := rowID(arg)
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	call := map[string]func() (json.RawMessage, error){
		"pause":  func() (json.RawMessage, error) { return into(nil)(c.PauseReplayTask(ctx, id)) },
		"resume": func() (json.RawMessage, error) { return into(nil)(c.ResumeReplayTask(ctx, id)) },
		"cancel": func() (json.RawMessage, error) { return into(nil)(c.CancelReplayTask(ctx, id)) },
	}[action]
	return a.printTask(call())
}

func (a *app) taskWatchCmd() *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a replay task with a progress bar until it is done or cancelled",
		Long: `watch polls the task and draws its progress on stderr until the task is done
(exit 0; 4 if some sends failed) or cancelled (exit 1), then prints it.
Tasks advance on the worker's 5-minute cron. Once the worker has answered, a
429, a 5xx or a dropped connection is reported on stderr and tried again.`,
		Example: "  redrive tasks watch 1",
		Args:    args(cobra.ExactArgs(1)),
		RunE:    func(cmd *cobra.Command, argv []string) error { return a.taskWatch(cmd.Context(), argv[0], interval) },
	}
	cmd.Flags().DurationVar(&interval, "interval", 0, "poll interval (default 2s)")
	return cmd
}

func (a *app) taskWatch(ctx context.Context, arg string, interval time.Duration) error {
	id, err := rowID(arg)
	if err != nil {
		return err
	}
	c, err := a.api()
	if err != nil {
		return err
	}
	if interval <= 0 {
		interval = a.env.Poll
	}
	retry := retrier{stderr: a.env.Stderr}
	for {
		var k task
		var data json.RawMessage
		if err := retry.try(ctx, interval, func() (err error) {
			k = task{}
			data, err = into(&k)(c.GetReplayTask(ctx, id))
			return err
		}); err != nil {
			return err
		}
		fmt.Fprintf(a.env.Stderr, "\r%s", progress(k))
		if k.State == "done" || k.State == "cancelled" {
			fmt.Fprintln(a.env.Stderr)
			return a.taskEnded(k, data)
		}
		if err := sleep(ctx, interval); err != nil {
			fmt.Fprintln(a.env.Stderr)
			return err
		}
	}
}

// taskEnded prints a task that is done or cancelled and returns watch's
// error: cancelled, or done with failed sends.
func (a *app) taskEnded(k task, data json.RawMessage) error {
	if err := a.printTask(data, nil); err != nil {
		return err
	}
	switch {
	case k.State == "cancelled":
		return fmt.Errorf("task %d was cancelled after %d of %d rows", k.ID, k.Sent, k.Matched)
	case k.SendFailed > 0:
		return partialError{fmt.Errorf("task %d is done: %d rows failed to send", k.ID, k.SendFailed)}
	}
	return nil
}

// progress is a one-line bar: [#######.....]  70/100  running  finish ~12:30:05.
func progress(k task) string {
	const width = 30
	done := k.Sent + k.SendFailed
	fill := 0
	if k.Matched > 0 {
		fill = done * width / k.Matched
	}
	fill = min(max(fill, 0), width)
	eta := ""
	if k.EstimatedFinishAt != nil && k.State != "done" {
		eta = "  finish ~" + time.UnixMilli(*k.EstimatedFinishAt).Format("15:04:05")
	}
	return fmt.Sprintf("[%s%s] %d/%d  %-9s%s   ", strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, k.Matched, k.State, eta)
}
