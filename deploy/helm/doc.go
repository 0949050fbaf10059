// Package helm holds promhbase's Helm chart (promhbase/) and its test: the
// chart rendered by Helm's own packages in both modes with each optional
// part on and off, every manifest decoded strictly into the Kubernetes and
// Prometheus Operator API types. A module of its own, so that Helm's and
// Kubernetes's dependencies stay out of promhbase's; `make test` runs it.
package helm
