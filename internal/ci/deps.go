package ci

import _ "github.com/sethvargo/go-githubactions"
