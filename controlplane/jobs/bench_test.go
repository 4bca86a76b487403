package jobs

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// BenchmarkRun enqueues b.N empty jobs in one transaction and runs them to
// completion with 8 workers: the runner's own cost per job (claim, lease,
// outcome), without the handler's. bench/jobs measures the same beside River.
func BenchmarkRun(b *testing.B) {
	for _, e := range pgtest.Engines() {
		b.Run(e.Name, func(b *testing.B) {
			db := e.Open(b)
			r, err := New(Config{Workers: 8}, Deps{DB: db})
			if err != nil {
				b.Fatal(err)
			}
			var ran atomic.Int64
			all := make(chan struct{})
			n := int64(b.N)
			r.Register("empty", func(context.Context, Job) error {
				if ran.Add(1) == n {
					close(all)
				}
				return nil
			}, KindOptions{})
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			err = db.Tx(ctx, func(tx *sql.Tx) error {
				for range b.N {
					if _, err := r.Enqueue(ctx, tx, "empty", nil, EnqueueOptions{}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			go r.Run(ctx)
			<-all
			r.Close()
		})
	}
}
