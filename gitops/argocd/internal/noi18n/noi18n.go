// Package noi18n keeps kubectl's translations out of the manager's memory.
//
// The Argo CD API types pull in kubectl's command packages, whose package
// variables call i18n.T at start-up; the first call unpacks and parses the
// embedded translation catalogue (about 4.6 MB allocated, most of it kept).
// The manager never prints kubectl's texts, and without LANG the catalogue
// only repeats the English defaults, so loading it is skipped: i18n.T then
// returns its argument. Import this package (for its side effect) from every
// package that imports the Argo CD types. It must stay free of other imports:
// Go initialises packages in import-path order once their imports are, so
// this one runs after kubectl's i18n package and before the kubectl commands.
package noi18n

import "k8s.io/kubectl/pkg/util/i18n"

func init() {
	// An error means the catalogue is already loaded; then there is
	// nothing left to save.
	_ = i18n.SetLoadTranslationsFunc(func() error { return nil })
}
