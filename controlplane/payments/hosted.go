package payments

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/payments/processor"
)

//go:embed templates/*.html templates/*.css
var templateFS embed.FS

var (
	pageCSS   = mustRead("templates/layout.css")
	pages     = template.Must(template.ParseFS(templateFS, "templates/*.html"))
	styleHash = func() string {
		h := sha256.Sum256([]byte(pageCSS))
		return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
	}()
)

func mustRead(name string) string {
	b, err := templateFS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// checkoutView is what the checkout page shows.
type checkoutView struct {
	CSS         template.CSS
	ID          string
	Amount      string
	Description string
	Email       string
	FormEmail   string
	FormCountry string
	CancelURL   string
	Test        bool
	Error       string
}

type messageView struct {
	CSS     template.CSS
	Title   string
	Message string
	Test    bool
}

// origin returns scheme://host of an absolute URL ("" when it has none).
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// writePage sends an HTML page with a locked-down policy: nothing loads,
// the one inline style is allowed by its hash, no framing, and the form
// posts only to this page (or follows a redirect to formTo).
func writePage(w http.ResponseWriter, status int, name string, data any, formTo ...string) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	forms := "'self'"
	for _, f := range formTo {
		if f != "" && !strings.ContainsAny(f, " ;,'\"") {
			forms += " " + f
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+styleHash+"; img-src 'none'; form-action "+forms+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (h Handlers) message(w http.ResponseWriter, status int, title, msg string, test bool) {
	writePage(w, status, "message.html", messageView{CSS: template.CSS(pageCSS), Title: title, Message: msg, Test: test})
}

// pageError renders an error of the service as a page.
func (h Handlers) pageError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrSessionPaid):
		h.message(w, http.StatusGone, "Already paid", "This payment link was paid already. Links are single use: ask the seller for a new one if you meant to pay again.", true)
	case errors.Is(err, ErrSessionExpired):
		h.message(w, http.StatusGone, "Link expired", "This payment link expired: links can be paid for 24 hours. Ask the seller for a new one.", true)
	default:
		e := api.AsError(err)
		if e.Kind == api.KindNotFound {
			h.message(w, http.StatusNotFound, "Payment link not found", "This payment link does not exist. Check the address or ask the seller for a new link.", false)
			return
		}
		h.S.d.Logger.Error("payments: hosted page", "path", r.URL.Path, "err", err)
		h.message(w, http.StatusInternalServerError, "Something went wrong", "The payment could not be taken. Nothing was charged; try again in a moment.", false)
	}
}

func (h Handlers) checkoutPage(w http.ResponseWriter, status int, x Session, v checkoutView) {
	v.CSS, v.ID, v.Amount, v.Description, v.Email, v.CancelURL, v.Test = template.CSS(pageCSS), x.ID, dollars(x.AmountCents), x.Description, x.CustomerEmail, x.CancelURL, !x.Livemode
	if v.FormCountry == "" {
		v.FormCountry = "US"
	}
	writePage(w, status, "checkout.html", v, origin(h.S.successURL(x)))
}

// Page answers GET /pay/{sessionId}: the checkout form while the link is
// payable, a page saying why otherwise.
func (h Handlers) Page(w http.ResponseWriter, r *http.Request) error {
	x, err := h.S.PublicSession(r.Context(), r.PathValue("sessionId"))
	if err == nil {
		switch x.State {
		case SessionPaid:
			err = ErrSessionPaid
		case SessionExpired:
			err = ErrSessionExpired
		}
	}
	if err == nil && (h.S.test == nil || x.Livemode) {
		err = api.NotFound("checkout session")
	}
	if err != nil {
		h.pageError(w, r, err)
		return nil
	}
	h.checkoutPage(w, http.StatusOK, x, checkoutView{})
	return nil
}

// Submit answers POST /pay/{sessionId}: a paid card redirects (303) to
// the success URL; a declined or mistyped one shows the form again with
// what to fix.
func (h Handlers) Submit(w http.ResponseWriter, r *http.Request) error {
	x, err := h.S.PublicSession(r.Context(), r.PathValue("sessionId"))
	if err != nil {
		h.pageError(w, r, err)
		return nil
	}
	if err := r.ParseForm(); err != nil {
		h.checkoutPage(w, http.StatusBadRequest, x, checkoutView{Error: "the form could not be read; try again"})
		return nil
	}
	f := PayForm{Card: processor.Card{Number: r.PostForm.Get("cardnumber"), Exp: r.PostForm.Get("exp"), CVC: r.PostForm.Get("cvc")},
		Email: r.PostForm.Get("email"), Country: r.PostForm.Get("country")}
	next, err := h.S.Pay(r.Context(), x.ID, f)
	if err != nil {
		e := api.AsError(err)
		switch e.Kind {
		case api.KindInvalid, api.KindPaymentRequired:
			h.checkoutPage(w, e.Kind.Status(), x, checkoutView{Error: e.Message, FormEmail: f.Email, FormCountry: f.Country})
		default:
			h.pageError(w, r, err)
		}
		return nil
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// Done answers GET /pay/{sessionId}/done: the thank-you page.
func (h Handlers) Done(w http.ResponseWriter, r *http.Request) error {
	x, err := h.S.PublicSession(r.Context(), r.PathValue("sessionId"))
	if err != nil {
		h.pageError(w, r, err)
		return nil
	}
	if x.State != SessionPaid {
		h.message(w, http.StatusOK, "Not paid yet", "This payment has not gone through. Go back to the payment page to pay.", !x.Livemode)
		return nil
	}
	msg := "Your payment of " + dollars(x.AmountCents) + " went through."
	if x.CustomerEmail != "" {
		msg += " A receipt goes to " + x.CustomerEmail + "."
	}
	h.message(w, http.StatusOK, "Thank you", msg, !x.Livemode)
	return nil
}

// Identity answers GET /payouts/identity/{token}: the test processor's
// identity check, which passes at once.
func (h Handlers) Identity(w http.ResponseWriter, r *http.Request) error {
	if h.S.test == nil {
		h.message(w, http.StatusNotFound, "Not found", "There is no identity check at this address.", false)
		return nil
	}
	if _, err := h.S.test.PayoutAccountByToken(r.Context(), r.PathValue("token")); err != nil {
		h.message(w, http.StatusNotFound, "Not found", "This identity-check link is not valid.", true)
		return nil
	}
	h.message(w, http.StatusOK, "Identity confirmed", "Test mode: the identity check passes at once and payouts are enabled for this workspace.", true)
	return nil
}
