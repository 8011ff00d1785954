package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestReviewCache: an answer is reused for the same token and path, a
// different token is reviewed on its own, and a failed review is not kept.
func TestReviewCache(t *testing.T) {
	var c reviewCache
	reviews := 0
	ask := func(token string, code int) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		got, _ := c.get(r, func() (int, string) { reviews++; return code, "" })
		return got
	}
	if ask("a", http.StatusOK) != http.StatusOK || ask("a", http.StatusForbidden) != http.StatusOK || reviews != 1 {
		t.Fatalf("an allowed answer was not reused (%d reviews)", reviews)
	}
	if ask("b", http.StatusForbidden) != http.StatusForbidden || reviews != 2 {
		t.Fatalf("another token reused a's answer (%d reviews)", reviews)
	}
	ask("c", http.StatusServiceUnavailable)
	if ask("c", http.StatusOK) != http.StatusOK || reviews != 4 {
		t.Fatalf("a failed review was remembered (%d reviews)", reviews)
	}
}
