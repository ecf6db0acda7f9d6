package install

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file reads back what render.go wrote: the settings of an
// installed registration, for `tether check` to compare with the config
// and the shell it runs in. It reads only the forms render.go writes.

// unitSettings reads TimeoutStopSec= and the PATH of Environment= from a
// systemd unit.
func unitSettings(unit []byte) Settings {
	var s Settings
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		switch k {
		case "TimeoutStopSec":
			if n, err := strconv.Atoi(v); err == nil {
				s.StopTimeout = time.Duration(n) * time.Second
			}
		case "Environment":
			if p, ok := strings.CutPrefix(systemdUnquote(v), "PATH="); ok {
				s.Path = p
			}
		}
	}
	return s
}

// systemdUnquote undoes systemdQuote.
func systemdUnquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return strings.NewReplacer("%%", "%", "$$", "$").Replace(s)
	}
	var b strings.Builder
	in := s[1 : len(s)-1]
	for i := 0; i < len(in); i++ {
		switch c := in[i]; {
		case c == '\\' && i+1 < len(in):
			i++
			b.WriteByte(in[i])
		case (c == '%' || c == '$') && i+1 < len(in) && in[i+1] == c:
			i++
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

var (
	plistExitTimeout = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`<key>ExitTimeOut</key>\s*<integer>(\d+)</integer>`)
	})
	plistPath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`<key>EnvironmentVariables</key>\s*<dict>(?s:.*?)<key>PATH</key>\s*<string>([^<]*)</string>`)
	})
	xmlUnescape = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// plistSettings reads ExitTimeOut and the PATH of EnvironmentVariables
// from a LaunchAgent.
func plistSettings(plist []byte) Settings {
	var s Settings
	if m := plistExitTimeout().FindSubmatch(plist); m != nil {
		n, _ := strconv.Atoi(string(m[1]))
		s.StopTimeout = time.Duration(n) * time.Second
	}
	if m := plistPath().FindSubmatch(plist); m != nil {
		s.Path = xmlUnescape.Replace(string(m[1]))
	}
	return s
}
