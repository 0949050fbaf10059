package wlog

// ReadAll is readAll for the external tests (fault_test.go).
var ReadAll = readAll
