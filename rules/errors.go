package rules

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalidSettings is matched (errors.Is) by every error that validation,
// ParseCountry, ParseIPList and DecodeSettingsPatch return for bad input; the
// control plane answers it with 400 and stores nothing.
var ErrInvalidSettings = errors.New("rules: invalid shield settings")

// ValidationError names the setting and the entry that was refused and why.
type ValidationError struct {
	// Field is the JSON name of the setting, e.g. "denyIps"; empty when the
	// error comes from a parser called on its own.
	Field string
	// Index is the position of the entry in a list setting, or -1.
	Index int
	// Entry is the refused entry as given (cut to 64 bytes), or empty.
	Entry string
	// Message says what is wrong, in lower case, e.g. "not an ISO 3166-1
	// country code; the United Kingdom is GB".
	Message string
}

// maxEntryInError bounds how much of a refused entry an error repeats.
const maxEntryInError = 64

// Error returns e.g. `rules: denyIps[3] "10.0.0.300": not an address or CIDR range`.
func (e *ValidationError) Error() string {
	b := []byte("rules: ")
	b = append(b, e.Field...)
	if e.Index >= 0 {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(e.Index), 10)
		b = append(b, ']')
	}
	if e.Entry != "" || e.Index >= 0 {
		if len(b) > len("rules: ") {
			b = append(b, ' ')
		}
		entry := e.Entry
		if len(entry) > maxEntryInError {
			entry = entry[:maxEntryInError] + "..."
		}
		b = strconv.AppendQuote(b, entry)
	}
	if len(b) > len("rules: ") {
		b = append(b, ": "...)
	}
	b = append(b, e.Message...)
	return string(b)
}

// Is reports whether target is ErrInvalidSettings.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidSettings }

// invalid returns a *ValidationError for an entry outside any list.
func invalid(entry, message string) *ValidationError {
	return &ValidationError{Index: -1, Entry: entry, Message: message}
}

// inField returns err with Field and Index set when it is a *ValidationError.
func inField(err error, field string, index int) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		c := *ve
		c.Field, c.Index = field, index
		return &c
	}
	return fmt.Errorf("rules: %s[%d]: %w", field, index, err)
}
