//go:build js && wasm

package platform

import (
	"context"
	"syscall/js"

	"github.com/redrive/redrive/queue"
)

// Consume makes consume the worker's queue handler. platform/worker/worker.mjs
// reads each delivered batch itself and calls
// binding.consumeBatch(queueName, messagesJSON, blobs, resolve, reject);
// resolve receives {settle, error, all}: settle is the JSON of the decisions
// the consumer made (settlement), which worker.mjs applies with ack() and
// retry(), or with one ackAll() when all is true (every message acked,
// none retried: a batch wholly stored), and error, when not "", makes it throw afterwards (the runtime
// then retries every message without a decision).
//
// It replaces syumai's queue bridge, which crosses into JavaScript about a
// dozen times per message (id, body, attempts, timestamp, the body's type,
// ack): a batch of 100 now crosses twice, in and out. A panic in consume
// keeps the decisions made before it and fails the batch; the Go instance
// keeps serving.
func Consume(consume func(ctx context.Context, queueName string, msgs []queue.Message) error) {
	binding := js.Global().Get("context").Get("binding")
	binding.Set("consumeBatch", js.FuncOf(func(_ js.Value, args []js.Value) any {
		queueName, desc, blobs := args[0].String(), args[1].String(), args[2]
		resolve, reject := args[3], args[4]
		calls.run(func() {
			b, err := decodeBatch(desc, func(i int) []byte {
				v := blobs.Index(i)
				b := make([]byte, v.Get("byteLength").Int())
				js.CopyBytesToGo(b, v)
				return b
			})
			if err != nil {
				reject.Invoke(js.Global().Get("Error").New("consumeBatch: " + err.Error()))
				return
			}
			settle, err := b.run(consume, queueName)
			res := map[string]any{"settle": settle, "error": "", "all": b.allAcked()}
			if err != nil {
				res["error"] = err.Error()
			}
			resolve.Invoke(js.ValueOf(res))
		})
		return nil
	}))
}
