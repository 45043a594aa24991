package deploy_test

import (
	"path/filepath"
	"testing"
)

// repoFile is the path of rel, relative to the repository's root, from
// this package's directory (where go test runs its tests).
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join("..", filepath.FromSlash(rel))
}
