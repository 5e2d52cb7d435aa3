package plant

import "flag"

// update asks the tests to rewrite their golden files (-update).
var update = flag.Bool("update", false, "rewrite golden files")

// Update is update for the package's external tests.
var Update = update
