package chaos

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// seedFlag replays a run: the kill moments and the order of the writes
// come from one seed, printed at the start of the run and by every test.
var seedFlag = flag.Uint64("seed", 0, "seed of the chaos suite's random kill times and write orders (0: $KICK_CHAOS_SEED, else a random one)")

// suiteSeed is the run's seed, set by TestMain.
var suiteSeed uint64

// resolveSeed returns -seed, else $KICK_CHAOS_SEED, else a random seed.
func resolveSeed() (uint64, error) {
	if *seedFlag != 0 {
		return *seedFlag, nil
	}
	if s := os.Getenv("KICK_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("KICK_CHAOS_SEED=%q is not an unsigned integer: %w", s, err)
		}
		return v, nil
	}
	return rand.Uint64(), nil
}

// random returns the test's own random source, from the run's seed and the
// test's name: a test run alone with the same seed makes the same choices
// as it did in the whole suite (the moments still depend on the machine).
func random(t *testing.T) *rand.Rand {
	t.Helper()
	h := fnv.New64a()
	_, _ = h.Write([]byte(t.Name()))
	t.Logf("seed %d; replay with KICK_CHAOS_SEED=%d go test -count=1 -p 1 -v -run '^%s$' ./integration/chaos/", suiteSeed, suiteSeed, t.Name())
	return rand.New(rand.NewPCG(suiteSeed, h.Sum64()))
}
