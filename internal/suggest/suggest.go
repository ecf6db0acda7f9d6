// Package suggest finds what a mistyped word most likely stands for: the
// "did you mean" of commands, flags, agent ids and config keys.
package suggest

import "strings"

// Best returns the candidate that word most likely stands for, or "":
// the only candidate that word is the beginning of (for a word of two
// letters or more: an abbreviation); failing that, the one fewest edits
// away (an edit inserts, deletes or replaces a letter, or swaps two
// neighbours) when that is at most 1 for a word of up to 4 letters and
// 2 for a longer one. Ties go to the earlier candidate.
func Best(word string, candidates []string) string {
	var prefixed []string
	for _, c := range candidates {
		if c == word {
			return ""
		}
		if strings.HasPrefix(c, word) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 && len(word) >= 2 {
		return prefixed[0]
	}
	limit := 2
	if len(word) <= 4 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// byte by byte: the fewest insertions, deletions, replacements and swaps
// of neighbours that turn a into b, no letter edited twice.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows
	// suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
