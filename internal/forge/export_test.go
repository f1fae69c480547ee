package forge

import "time"

// SetGitLabRetryDelay sets the pause between AutoMerge's attempts on GitLab
// for a test and returns the function that restores it.
func SetGitLabRetryDelay(d time.Duration) (restore func()) {
	old := gitLabRetryDelay
	gitLabRetryDelay = d
	return func() { gitLabRetryDelay = old }
}
