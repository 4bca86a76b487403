package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
)

// Setting names accepted in a PUT body, as the spec spells them.
var settingNames = []string{"allowIps", "blockAiCrawlers", "blockedCountries", "denyIps", "enabled", "logOnly"}

// DecodeSettingsPatch decodes a PUT /api/services/shield body, which may hold
// any of enabled, blockedCountries, denyIps, allowIps, blockAiCrawlers and
// logOnly, merges it over saved and returns the result normalized (see
// Settings.Normalized) and validated. saved is not changed.
//
// It is strict: the body must be one JSON object; a name it does not know,
// with any spelling other than the spec's, is refused as an unknown setting;
// a boolean must be true or false; a list must be an array of strings, or
// null to empty it. "passwords" is refused too: the control plane handles
// that body form itself. Every refusal is a *ValidationError naming the
// setting (and the entry), matching ErrInvalidSettings; nothing is merged.
func DecodeSettingsPatch(saved Settings, body []byte) (Settings, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return Settings{}, &ValidationError{Index: -1, Message: "body must be a JSON object"}
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return Settings{}, &ValidationError{Index: -1, Message: "body is not valid JSON"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Settings{}, &ValidationError{Index: -1, Message: "body must hold one JSON object"}
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, known := slices.BinarySearch(settingNames, name); !known {
			msg := "unknown setting"
			if name == "passwords" {
				msg = "passwords are set in a request of their own"
			}
			return Settings{}, &ValidationError{Field: name, Index: -1, Message: msg}
		}
	}

	s := saved
	for _, name := range names {
		raw := fields[name]
		var err error
		switch name {
		case "enabled":
			err = decodeBool(raw, &s.Enabled)
		case "blockAiCrawlers":
			err = decodeBool(raw, &s.BlockAICrawlers)
		case "logOnly":
			err = decodeBool(raw, &s.LogOnly)
		case "blockedCountries":
			err = decodeList(raw, &s.BlockedCountries)
		case "denyIps":
			err = decodeList(raw, &s.DenyIPs)
		case "allowIps":
			err = decodeList(raw, &s.AllowIPs)
		}
		if err != nil {
			return Settings{}, &ValidationError{Field: name, Index: -1, Message: err.Error()}
		}
	}
	s = s.Normalized()
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

var errNotBool = errors.New("must be true or false")

func decodeBool(raw json.RawMessage, dst *bool) error {
	switch string(raw) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return errNotBool
	}
	return nil
}

var errNotList = errors.New("must be an array of strings")

func decodeList(raw json.RawMessage, dst *[]string) error {
	if string(raw) == "null" {
		*dst = []string{}
		return nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		return errNotList
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return errNotList
	}
	if len(elems) > MaxAddressEntries {
		// Refuse before decoding a huge list; Validate names the exact limit.
		return errors.New("too many entries")
	}
	list := make([]string, len(elems))
	for i, e := range elems {
		if len(e) == 0 || e[0] != '"' {
			return errNotList
		}
		if err := json.Unmarshal(e, &list[i]); err != nil {
			return errNotList
		}
	}
	*dst = list
	return nil
}
