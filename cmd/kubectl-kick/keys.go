package main

import (
	"fmt"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// keyLevelNote says why explain's change of a dependency may be newer than
// the one the manager counts.
const keyLevelNote = "the manager counts only changes of the keys read, matched by keyed hashes explain cannot compute; shown: the newest change of any key"

// describeKeys fills in how many keys of the source the workload reads and
// whether the manager judges it key by key (policy restart.keys Read and a
// record with per-key history). It names no key: by count only.
func describeKeys(d *dependencyResult, df depFacts, p *kickv1alpha1.KickPolicy) {
	if df.reads == nil {
		return
	}
	d.Reads = "every key"
	if df.reads.All {
		return
	}
	n := len(df.reads.Names)
	d.KeysRead = &n
	every := p != nil && p.Spec.CountsEveryKey()
	if df.record != nil && df.record.Spec.Keys != nil {
		count := int(df.record.Spec.Keys.Count)
		d.KeyEntries = &count
		every = every || !df.record.Spec.Keys.Usable()
		if !every {
			d.KeyLevel = keyLevelNote
		}
	}
	if !every {
		d.Reads = fmt.Sprintf("changes of the %d key(s) it reads", n)
	}
}
