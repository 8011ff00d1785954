package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestReviewCache: an answer is reused for the same token and question, a
// different token or question is reviewed on its own, and a failed review
// is not kept.
func TestReviewCache(t *testing.T) {
	var c reviewCache[struct{}]
	reviews := 0
	ask := func(token, question string, code int) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		_, got, _ := c.get(r, question, func() (struct{}, int, string) { reviews++; return struct{}{}, code, "" })
		return got
	}
	if ask("a", "/metrics", http.StatusOK) != http.StatusOK || ask("a", "/metrics", http.StatusForbidden) != http.StatusOK || reviews != 1 {
		t.Fatalf("an allowed answer was not reused (%d reviews)", reviews)
	}
	if ask("b", "/metrics", http.StatusForbidden) != http.StatusForbidden || reviews != 2 {
		t.Fatalf("another token reused a's answer (%d reviews)", reviews)
	}
	if ask("a", "list kickrequests in b", http.StatusForbidden) != http.StatusForbidden || reviews != 3 {
		t.Fatalf("another question reused a's answer (%d reviews)", reviews)
	}
	ask("c", "/metrics", http.StatusServiceUnavailable)
	if ask("c", "/metrics", http.StatusOK) != http.StatusOK || reviews != 5 {
		t.Fatalf("a failed review was remembered (%d reviews)", reviews)
	}
}
