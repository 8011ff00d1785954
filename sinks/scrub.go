package sinks

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxMessage bounds status messages (lastError, condition messages).
const maxMessage = 1024

// redacted replaces a secret value found in a message.
const redacted = "[redacted]"

// urlPattern finds URLs inside error texts (net/http quotes the request URL in its errors).
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s"'<>]+`)

// scrubber removes secret material from text that goes to status, Events and logs: every URL is
// cut down to scheme and host (paths and queries can hold tokens, e.g. Slack's), and every known
// secret value is replaced.
type scrubber struct {
	secrets []string // on one line (see oneLine), longest first, so a value containing another is replaced whole
}

// minSecretLen is the shortest value a scrubber replaces: shorter ones would garble every
// message (a one-letter value would replace that letter everywhere).
const minSecretLen = 4

// withheld replaces a whole message that would still show a secret value after scrubbing,
// which only a value built to defeat the scrubber (one containing the redaction marker, say)
// can cause.
const withheld = "message withheld: it would show a secret value"

func newScrubber(values ...string) scrubber {
	seen := make(map[string]bool, len(values))
	var out []string
	for _, v := range values {
		// Messages are put on one line before values are looked for, so look for the values
		// as they would appear there: "a\n b" shows as "a b".
		v = oneLine(v)
		if len(v) >= minSecretLen && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return scrubber{secrets: out}
}

// clean returns text on one line, without URLs' userinfo, paths and queries and without secret
// values, at most maxMessage bytes long.
func (s scrubber) clean(text string) string {
	text = urlPattern.ReplaceAllStringFunc(oneLine(text), redactURL)
	// Replacing one value can form another (one that contains the marker): repeat a few times.
	for range 4 {
		changed := false
		for _, v := range s.secrets {
			if strings.Contains(text, v) {
				text, changed = strings.ReplaceAll(text, v, redacted), true
			}
		}
		if !changed {
			break
		}
	}
	text = truncate(text, maxMessage)
	// Last line of defence: the cut's "…" or a pathological value can still form a value.
	if s.shows(text) {
		if s.shows(withheld) {
			return ""
		}
		return withheld
	}
	return text
}

// shows reports whether text contains one of the secret values.
func (s scrubber) shows(text string) bool {
	for _, v := range s.secrets {
		if strings.Contains(text, v) {
			return true
		}
	}
	return false
}

// redactURL keeps only the scheme and host of a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "[url]"
	}
	return u.Scheme + "://" + u.Host
}

// oneLine replaces control characters and invalid UTF-8 with spaces and collapses runs of
// white space.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
