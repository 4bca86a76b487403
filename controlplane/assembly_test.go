package controlplane_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/payments"
)

// TestBillingThroughTheAssembly checks the ledger is wired: a Balance loaded
// on the control plane's ledger shows in GET /api/billing, only admins read
// it, and the spending limit round-trips.
func TestBillingThroughTheAssembly(t *testing.T) {
	e := cptest.New(t)
	ws := e.CP.Bootstrap.Workspace.ID
	if err := e.CP.Billing.AddBalance(context.Background(), ws, 5*billing.Dollar, "operator", "test"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Billing billing.Summary `json:"billing"`
	}
	e.Owner.Must(http.StatusOK, "GET", "/api/billing", nil).JSON(t, &got)
	if got.Billing.Balance != 5*billing.Dollar || got.Billing.Included != 10*billing.Dollar {
		t.Fatalf("billing = %+v, want balance 5 dollars and 10 dollars included on pro", got.Billing)
	}
	dev := e.Member("dev@example.com", "developer")
	if r := dev.Do("GET", "/api/billing", nil); r.Status != http.StatusForbidden {
		t.Fatalf("developer reads billing: %d %s", r.Status, r.Body)
	}
	e.Owner.Must(http.StatusOK, "PUT", "/api/billing/spend-limit", map[string]any{"spendLimitMicros": 20_000_000}).JSON(t, &got)
	if got.Billing.SpendLimit == nil || *got.Billing.SpendLimit != 20*billing.Dollar {
		t.Fatalf("spend limit = %v", got.Billing.SpendLimit)
	}
	if err := e.CP.Billing.Verify(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
}

// TestDailyJobsRegistered runs what is due on a fresh control plane: the
// periodic database storage charge and the reservation sweep run without
// error.
func TestDailyJobsRegistered(t *testing.T) {
	e := cptest.New(t)
	n, err := e.CP.Jobs.RunDue(context.Background())
	if err != nil || n < 2 {
		t.Fatalf("RunDue = %d, %v; want the storage charge and the reservation sweep", n, err)
	}
}

// TestEmailVerificationThroughTheAssembly mails a token to the data
// directory's mail folder, redeems it, and the workspace then reports the
// owner's e-mail verified.
func TestEmailVerificationThroughTheAssembly(t *testing.T) {
	e := cptest.New(t)
	e.Owner.Must(http.StatusAccepted, "POST", "/api/account/email/verification", nil)
	files, _ := filepath.Glob(filepath.Join(e.CP.Config().DataDir, "mail", "*"))
	if len(files) != 1 {
		t.Fatalf("mail files = %v", files)
	}
	body, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	tok := regexp.MustCompile(`svcverify_[A-Za-z0-9_-]+`).FindString(string(body))
	if tok == "" {
		t.Fatalf("no token in %s", body)
	}
	e.Client("").Must(http.StatusOK, "POST", "/api/account/email/verify", map[string]any{"token": tok})
	ok, err := e.CP.Accounts.OwnerEmailVerified(context.Background(), e.CP.Bootstrap.Workspace.ID)
	if err != nil || !ok {
		t.Fatalf("verified = %v, %v", ok, err)
	}
}

// TestPaymentsThroughTheAssembly enables payments on a project, creates a
// checkout link with a project key and opens the hosted page the link names
// on the control plane's own address.
func TestPaymentsThroughTheAssembly(t *testing.T) {
	e := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.Payments.PublicBaseURL = "http://payments.test" }})
	prj := e.CreateProject("Shop")
	var acct struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
	}
	e.Owner.Must(http.StatusOK, "POST", "/api/projects/"+prj+"/payments", nil).JSON(t, &acct)
	key := e.NewKey("full", prj)
	var created payments.Created
	key.Must(http.StatusCreated, "POST", "/api/payments/"+acct.Account.ID, map[string]any{"amountCents": 1000}).JSON(t, &created)
	if created.FeeCents != 69 || !strings.HasPrefix(created.URL, "http://payments.test/pay/") {
		t.Fatalf("created = %+v; want fee 69 cents (3.9%% + 30) and a link on the configured address", created)
	}
	page := e.Client("").Do("GET", strings.TrimPrefix(created.URL, "http://payments.test"), nil)
	if page.Status != http.StatusOK || !strings.Contains(string(page.Body), `autocomplete="cc-number"`) {
		t.Fatalf("hosted page: %d %s", page.Status, page.Body)
	}
	// Deleting the project is blocked by the payable link.
	if r := e.Owner.Do("DELETE", "/api/projects/"+prj, nil); r.Status != http.StatusConflict || r.ErrorCode() != "deletion_blocked" {
		t.Fatalf("delete with a payable link: %d %s", r.Status, r.Body)
	}
}

// TestStorageMeasuredThroughTheAssembly pushes a commit, deploys it, runs
// the daily measurement, and reads the bytes and objects the workspace
// stores in the usage report: a file kept in both the repo and the
// deployment counts once per place.
func TestStorageMeasuredThroughTheAssembly(t *testing.T) {
	e := cptest.New(t)
	prj := e.CreateProject("Stored")
	var repo struct{ Repo struct{ ID string } }
	e.Owner.Must(http.StatusCreated, "POST", "/api/repos", map[string]any{"name": "site"}).JSON(t, &repo)
	page := strings.Repeat("x", 1000)
	e.Owner.Must(http.StatusCreated, "POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": "one",
		"files": []map[string]any{{"path": "index.html", "content": page}, {"path": "copy.html", "content": page}, {"path": "a.txt", "content": "abc"}}})
	e.Owner.Must(http.StatusAccepted, "POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": prj, "commit": 1})
	e.CP.Deploys().Wait()
	// A memory store's two keys: 6 bytes each (key and value).
	var st struct{ Store struct{ ID string } }
	e.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+prj+"/memory", map[string]any{"name": "kv"}).JSON(t, &st)
	e.Owner.Must(http.StatusOK, "PUT", "/api/memory/"+st.Store.ID+"/keys/a", "12345")
	e.Owner.Must(http.StatusOK, "PUT", "/api/memory/"+st.Store.ID+"/keys/bb", "1234")
	if _, err := e.CP.Jobs.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Storage struct {
			Bytes, Objects int64
			MeasuredAt     *string
		} `json:"storage"`
	}
	e.Owner.Must(http.StatusOK, "GET", "/api/usage?period=7d", nil).JSON(t, &rep)
	// Two distinct blobs (1,000 bytes and 3 bytes) in the repo and again in
	// the deployment, and the memory store's two keys.
	if rep.Storage.Bytes != 2*1003+12 || rep.Storage.Objects != 4+2 || rep.Storage.MeasuredAt == nil {
		t.Fatalf("storage = %+v, want 2018 bytes in 6 objects, measured", rep.Storage)
	}
}

// TestFailingWebhookNeedsAttention sets a webhook on a receiver whose
// certificate the platform does not trust, sends a ping, lets the delivery
// job try it, and finds the failing deliveries on the attention list.
func TestFailingWebhookNeedsAttention(t *testing.T) {
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(receiver.Close)
	e := cptest.New(t)
	prj := e.CreateProject("Hooks")
	var acct struct {
		Account struct{ ID string } `json:"account"`
	}
	e.Owner.Must(http.StatusOK, "POST", "/api/projects/"+prj+"/payments", nil).JSON(t, &acct)
	e.Owner.Must(http.StatusOK, "PATCH", "/api/payments/"+acct.Account.ID, map[string]any{"action": "set-webhook", "webhookUrl": receiver.URL + "/hook"})
	e.Owner.Must(http.StatusOK, "PATCH", "/api/payments/"+acct.Account.ID, map[string]any{"action": "test-webhook"})
	if _, err := e.CP.Jobs.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	var att struct {
		Items []struct {
			Kind, ProjectID, Reason string
		} `json:"items"`
	}
	e.Owner.Must(http.StatusOK, "GET", "/api/attention", nil).JSON(t, &att)
	for _, it := range att.Items {
		if it.Kind == "webhooks_failing" && it.ProjectID == prj {
			return
		}
	}
	t.Fatalf("no failing-webhook item in %+v", att.Items)
}

// TestRelativeDataDirBecomesAbsolute: `make run` passes --data ./data; the
// processes the platform starts elsewhere (nginx for live ingest, apps in
// their own directories) must get absolute paths.
func TestRelativeDataDirBecomesAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	e := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.DataDir = "data" }})
	if dir := e.CP.Config().DataDir; !filepath.IsAbs(dir) || filepath.Base(dir) != "data" {
		t.Fatalf("data directory %q", dir)
	}
}
