package client

import (
	"context"
	"errors"
	"time"
)

// DeviceCode is a device login's code pair (POST /api/device/code).
type DeviceCode struct {
	DeviceCode      string `json:"deviceCode"`
	UserCode        string `json:"userCode"`
	VerificationURI string `json:"verificationUri"`
	ExpiresIn       int    `json:"expiresIn"`
	Interval        int    `json:"interval"`
}

// StartDeviceLogin asks for a code pair (no key needed).
func (c *Client) StartDeviceLogin(ctx context.Context, clientName string) (DeviceCode, error) {
	var out DeviceCode
	return out, c.post(ctx, "/api/device/code", map[string]string{"clientName": clientName}, &out)
}

// ApproveDeviceLogin approves a user code with this client's key: the
// waiting command line gets a key of the same member.
func (c *Client) ApproveDeviceLogin(ctx context.Context, userCode string) error {
	return c.post(ctx, "/api/device/approve", map[string]string{"userCode": userCode}, nil)
}

// AwaitDeviceLogin polls until the code pair is approved and returns the
// key made (or the refusal: access_denied, expired_token). It waits the
// answer's interval between polls, longer after a slow_down.
func (c *Client) AwaitDeviceLogin(ctx context.Context, dc DeviceCode) (string, error) {
	every := time.Duration(dc.Interval) * time.Second
	if every <= 0 {
		every = 5 * time.Second
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-timer.C:
		}
		var out struct {
			Key string `json:"key"`
		}
		err := c.post(ctx, "/api/device/token", map[string]string{"deviceCode": dc.DeviceCode}, &out)
		var ae *Error
		switch {
		case err == nil:
			return out.Key, nil
		case errors.As(err, &ae) && ae.Code == "authorization_pending":
		case errors.As(err, &ae) && ae.Code == "slow_down":
			every += 5 * time.Second
		default:
			return "", err
		}
		timer.Reset(every)
	}
}
