package cache_test

import (
	"fmt"
	"time"

	"github.com/svcplatform/platform/cache"
	"github.com/valyala/fasthttp"
)

// Example_static shows the edge's static-site path: the key holds the
// deployment, the TTL comes from the workspace's CDN settings.
func Example_static() {
	c, _ := cache.New(cache.Config{}, nil)
	defer c.Close()

	key := cache.StaticKey{Deployment: "dpl_42", Path: []byte("/index.html"), Encoding: "br"}
	if _, ok := c.GetStatic(key); !ok {
		// Miss: read the file from the deployment, answer, and keep it.
		c.SetStatic(key, cache.StaticResponse{
			Status:          200,
			ContentType:     []byte("text/html; charset=utf-8"),
			ETag:            []byte(`"abc"`),
			ContentEncoding: []byte("br"),
			Body:            []byte("<h1>hi</h1>"),
		}, cache.StaticTTL(true, 3600))
		c.Wait() // only for this example: writes are asynchronous
	}
	e, ok := c.GetStatic(key)
	var resp fasthttp.Response
	e.Respond(&resp, time.Now())
	fmt.Println(ok, resp.StatusCode(), string(resp.Header.ContentEncoding()), string(resp.Body()))
	// Output: true 200 br <h1>hi</h1>
}

// Example_shared shows the edge's path for apps and functions. origin
// stands for the edge's pooled fasthttp client.
func Example_shared() {
	c, _ := cache.New(cache.Config{}, nil)
	defer c.Close()
	origin := func(req *fasthttp.Request, resp *fasthttp.Response) {
		if string(req.Header.Peek("If-None-Match")) == `"v1"` {
			resp.SetStatusCode(fasthttp.StatusNotModified)
			resp.Header.Set("Cache-Control", "s-maxage=60")
			return
		}
		resp.Header.Set("Cache-Control", "s-maxage=60")
		resp.Header.Set("ETag", `"v1"`)
		resp.SetBodyString("hello")
	}

	serve := func(ctx *fasthttp.RequestCtx) string {
		r := c.Lookup("fn_7@dpl_3", &ctx.Request)
		switch r.State {
		case cache.Hit:
			r.Entry.Respond(&ctx.Response, time.Now())
			return "hit"
		case cache.GatewayTimeout:
			ctx.SetStatusCode(fasthttp.StatusGatewayTimeout)
			return "504"
		}
		out := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(out)
		ctx.Request.CopyTo(out)
		if r.State == cache.Revalidate {
			r.Entry.Conditional(&out.Header)
		}
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
		sent := time.Now()
		origin(out, resp)
		received := time.Now()
		if r.State == cache.Revalidate && resp.StatusCode() == fasthttp.StatusNotModified {
			if e, ok := c.Revalidated(&ctx.Request, r.Entry, resp, sent, received); ok {
				e.Respond(&ctx.Response, received)
				return "revalidated"
			}
			// The 304 was for another representation: fetch again
			// without conditions (not shown).
		}
		d := c.Store("fn_7@dpl_3", &ctx.Request, resp, sent, received)
		resp.CopyTo(&ctx.Response)
		return "miss, " + d.Reason.String()
	}

	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/greeting")
	ctx.Request.Header.SetHost("app.example")
	fmt.Println(serve(&ctx))
	c.Wait() // only for this example: writes are asynchronous
	ctx.Response.Reset()
	fmt.Println(serve(&ctx), string(ctx.Response.Body()))
	ctx.Request.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Reset()
	fmt.Println(serve(&ctx), string(ctx.Response.Body()))
	// Output:
	// miss, storable
	// hit hello
	// revalidated hello
}
