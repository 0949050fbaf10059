// Package archtest holds ARCHITECTURE.md's package table to the code, as
// TestFlagDocs (cmd/promhbase) holds docs/flags.md: its test reads the
// table and the module's import graph (`go list`) and fails when a package
// is in no row, imports a package its row's "may import" column does not
// allow, or imports a package of a higher row. ARCHITECTURE.md states the
// column's convention. The package has no code of its own.
package archtest
