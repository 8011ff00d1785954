// Package certs keeps the preflight webhook's serving certificate: a CA of
// the manager's own and a serving certificate it signs, stored in a Secret
// in the manager's namespace, renewed before they expire (a new CA is
// published in the webhook configuration's caBundle before it signs
// anything), and served from memory so a renewal needs no restart.
package certs
