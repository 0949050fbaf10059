// Package archtest holds the tree to its rules, as TestFlagDocs
// (cmd/promhbase) holds docs/flags.md to the flags. Its tests read the
// module's packages (`go list`, build tags faults and cluster) and fail
// when:
//
//   - ARCHITECTURE.md's package table and the import graph disagree: a
//     package in no row or in several, an import its row's "may import"
//     column does not allow, an import of a higher row (table_test.go;
//     ARCHITECTURE.md states the column's convention);
//   - a package whose production files start goroutines (a go statement,
//     or wg.Go(f)) has no TestMain calling VerifyTestMain (test/testkit/testleak's,
//     or goleak's under internal/), unless leakExempt names it with the
//     reason (rules_test.go);
//   - any file of the module imports testify;
//   - a product function (the test and lab packages aside) is over 120
//     lines without a "// long:" line saying why (funclen_test.go);
//   - a package under internal/ imports, by its code or its tests, a
//     package of the module outside internal/.
//
// Each complaint names the package and what it lacks. The package has no
// code of its own.
package archtest
