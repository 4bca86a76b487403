package client

import (
	"context"
	"time"
)

// DefaultFollowEvery is how often Follow asks after a deployment.
const DefaultFollowEvery = 500 * time.Millisecond

// FollowOptions say how Follow reports a deployment's progress.
type FollowOptions struct {
	// Every is the time between two reads (DefaultFollowEvery when 0).
	Every time.Duration
	// Line is called with each new deploy log line, oldest first.
	Line func(LogLine)
}

// Follow reads a deployment until it leaves state deploying and returns
// it as it ended (live, failed, or inactive when a newer deploy replaced
// it first). Each new log line goes to o.Line as it appears. A read that
// fails ends Follow with its error; so does ctx.
func (c *Client) Follow(ctx context.Context, id string, o FollowOptions) (DeploymentDetail, error) {
	every := o.Every
	if every <= 0 {
		every = DefaultFollowEvery
	}
	seen := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return DeploymentDetail{}, ctx.Err()
		case <-timer.C:
		}
		d, err := c.Deployment(ctx, id)
		if err != nil {
			return d, err
		}
		if seen > len(d.Log) {
			seen = 0 // a log read back shorter: report it whole again
		}
		for _, l := range d.Log[seen:] {
			if o.Line != nil {
				o.Line(l)
			}
		}
		seen = len(d.Log)
		if d.Deployment.State != StateDeploying {
			return d, nil
		}
		timer.Reset(every)
	}
}
