package rules

import "strings"

// The crawler matcher scans a user agent once, token by token, where a token
// is a maximal run of ASCII letters, digits, '-' and '_' (so "GPTBot/1.1",
// "(compatible; GPTBot;" and "+https://openai.com/gptbot" all hold the token
// GPTBot, while "Applebot" is not "Applebot-Extended"). A token is looked up
// by its first two characters and its length in a table built once from
// crawlerTokens; entries whose name goes on past the first token ("ChatGPT
// Agent", "bigsur.ai") check the rest of the name in place, followed by a
// token boundary. Nothing is allocated and the user agent is not changed.

// charClass maps a byte to 1+its index among token characters (letters
// folded to lower case), or 0 for a separator.
var charClass = func() (t [256]uint8) {
	n := uint8(1)
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = n, n
		n++
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = n
		n++
	}
	t['-'], t['_'] = n, n+1
	return t
}()

// numClasses is the number of token-character classes plus one.
const numClasses = 26 + 10 + 2 + 1

// crawlerWord is a first token shared by one or more list entries.
type crawlerWord struct {
	word     string   // lower case
	suffixes []string // lower case rest of each entry; "" for the bare word
	tokens   []string // the entry each suffix completes, as listed
}

// crawlerIndex finds the candidate words of a token from its first two
// characters; within a bucket, words are compared by length first.
type crawlerIndex struct {
	words   []crawlerWord
	buckets [numClasses * numClasses]struct{ start, n uint8 }
	lengths uint64 // bit l set when some word has length l
}

var crawlers = buildCrawlerIndex(crawlerTokens)

func buildCrawlerIndex(list []crawlerToken) *crawlerIndex {
	ix := &crawlerIndex{}
	byWord := map[string]int{}
	for _, ct := range list {
		low := strings.ToLower(ct.token)
		end := 0
		for end < len(low) && charClass[low[end]] != 0 {
			end++
		}
		if end < 2 || end > 63 {
			panic("rules: crawler token " + ct.token + " has a first word shorter than 2 or longer than 63")
		}
		word, suffix := low[:end], low[end:]
		i, ok := byWord[word]
		if !ok {
			i = len(ix.words)
			byWord[word] = i
			ix.words = append(ix.words, crawlerWord{word: word})
		}
		w := &ix.words[i]
		dup := false
		for _, s := range w.suffixes {
			dup = dup || s == suffix
		}
		if !dup {
			w.suffixes = append(w.suffixes, suffix)
			w.tokens = append(w.tokens, ct.token)
		}
	}
	// Sort words by bucket so each bucket is one run of ix.words.
	bucketOf := func(w string) int { return int(charClass[w[0]])*numClasses + int(charClass[w[1]]) }
	sorted := make([]crawlerWord, 0, len(ix.words))
	for b := range ix.buckets {
		start := len(sorted)
		for _, w := range ix.words {
			if bucketOf(w.word) == b {
				sorted = append(sorted, w)
			}
		}
		if n := len(sorted) - start; n > 0 {
			if len(sorted) > 255 || n > 255 {
				panic("rules: crawler table too large for its index")
			}
			ix.buckets[b].start, ix.buckets[b].n = uint8(start), uint8(n)
		}
	}
	ix.words = sorted
	for _, w := range ix.words {
		ix.lengths |= 1 << len(w.word)
	}
	return ix
}

// MatchCrawler reports whether the user agent ua declares one of the curated
// AI crawler or AI-assistant fetcher tokens, and which (as listed). Matching
// is case-insensitive on whole tokens: browsers, search-engine crawlers
// (Googlebot, Bingbot, Applebot, ...), link-preview fetchers
// (facebookexternalhit, Slackbot, Discordbot, ...) and editors such as VS Code
// are not matched. It does not allocate and does not keep ua.
func MatchCrawler(ua []byte) (token string, ok bool) {
	ix := crawlers
	n := len(ua)
	for i := 0; i < n; {
		c0 := charClass[ua[i]]
		if c0 == 0 {
			i++
			continue
		}
		start := i
		i++
		for i < n && charClass[ua[i]] != 0 {
			i++
		}
		l := i - start
		if l >= 64 || ix.lengths&(1<<l) == 0 {
			continue
		}
		b := ix.buckets[int(c0)*numClasses+int(charClass[ua[start+1]])]
		for _, w := range ix.words[b.start : b.start+b.n] {
			if len(w.word) != l || !equalLower(ua[start:i], w.word) {
				continue
			}
			for k, suf := range w.suffixes {
				if suf == "" {
					return w.tokens[k], true
				}
				end := i + len(suf)
				if end <= n && equalLower(ua[i:end], suf) && (end == n || charClass[ua[end]] == 0) {
					return w.tokens[k], true
				}
			}
		}
	}
	return "", false
}

// equalLower reports whether b folded to lower case (ASCII) equals low.
func equalLower(b []byte, low string) bool {
	if len(b) != len(low) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != low[i] {
			return false
		}
	}
	return true
}
