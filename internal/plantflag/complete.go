package plantflag

import (
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"servesim/internal/cliflag"
	"servesim/internal/plant"
	"servesim/internal/profile"
	"servesim/internal/runparams"
)

// CompleteController completes --controller: the controllers, and
// fixed:MHZ and race-to-idle:MHZ for every clock level of the profile
// given with --profile (the embedded proxy's without one, or when it does
// not load).
func CompleteController(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	values := append([]string{}, plant.ControllerNames...)
	levels := completionProfile(cmd).ClockMHz
	for _, kind := range []string{"fixed:", "race-to-idle:"} {
		for _, mhz := range levels {
			values = append(values, kind+strconv.FormatFloat(mhz, 'f', -1, 64))
		}
	}
	return cliflag.CompleteItems(toComplete, values), cobra.ShellCompDirectiveNoFileComp
}

// completionProfile is the profile named by the command's --profile when
// it names exactly one that loads, else the embedded proxy.
func completionProfile(cmd *cobra.Command) *profile.Profile {
	f := cmd.Flags().Lookup("profile")
	if f == nil || !f.Changed {
		return profile.Default()
	}
	path := profileFlagPath(f)
	if path == "" || path == runparams.Embedded {
		return profile.Default()
	}
	p, err := profile.Load(profile.ResolvePath(path))
	if err != nil {
		return profile.Default()
	}
	return p
}

// profileFlagPath is the one path a --profile flag holds, or "" when it
// holds several.
func profileFlagPath(f *pflag.Flag) string {
	if list, ok := f.Value.(*cliflag.List); ok {
		if items := list.Items(); len(items) == 1 {
			return items[0]
		}
		return ""
	}
	return f.Value.String()
}
