package profile

import (
	"slices"
	"strings"

	"servesim/internal/profile/profiletest"
)

// bundleVariant is the synthetic measured bundle with one change.
type bundleVariant struct {
	name string
	// failsAt is the first check expected to fail; "" when the profile
	// loads.
	failsAt string
	// measured is whether a loading variant is a validated measured_l4.
	measured bool
	edit     func(b *profiletest.Bundle)
}

// variantTelemetryRows keeps the variants small and fast.
const variantTelemetryRows = 40

// rawRow returns the index of the first raw row matching phase,
// concurrency and repeat at a requested clock.
func rawRow(b *profiletest.Bundle, clock, phase, concurrency, repeat string) int {
	for i := range b.Raw.Rows {
		if b.Raw.Get(i, "requested_clock_mhz") == clock && b.Raw.Get(i, "phase") == phase &&
			b.Raw.Get(i, "concurrency") == concurrency && b.Raw.Get(i, "repeat") == repeat {
			return i
		}
	}
	panic("no such raw row")
}

func setManifest(key string, v any) func(*profiletest.Bundle) {
	return func(b *profiletest.Bundle) { b.Manifest.Set(key, v) }
}

func setManifestRaw(key, raw string) func(*profiletest.Bundle) {
	return func(b *profiletest.Bundle) { b.Manifest.SetRaw(key, raw) }
}

func deleteManifest(key string) func(*profiletest.Bundle) {
	return func(b *profiletest.Bundle) { b.Manifest.Delete(key) }
}

// editRaw changes one field of the first batch row of a condition.
func editRaw(phase, concurrency, column, value string) func(*profiletest.Bundle) {
	return func(b *profiletest.Bundle) {
		b.Raw.Set(rawRow(b, "1500", phase, concurrency, "2"), column, value)
	}
}

// editAfterDerive changes a derived manifest field after Write computed it.
func editAfterDerive(f func(m *profiletest.Manifest)) func(*profiletest.Bundle) {
	return func(b *profiletest.Bundle) { b.AfterDerive = f }
}

// setBoth sets a field of a modeled level in both aggregate tables.
func setBoth(b *profiletest.Bundle, clockIndex int, column, value string) {
	b.Profile.Set(clockIndex, column, value)
	b.AllRequested.Set(clockIndex, column, value)
}

func conditionsWith(edit func([]map[string]any) []map[string]any) func(*profiletest.Bundle) {
	return func(b *profiletest.Bundle) {
		var conds []map[string]any
		for _, p := range []int{128, 512, 2048, 4096} {
			for _, c := range []int{1, 4, 8} {
				conds = append(conds, map[string]any{"phase": "prefill", "prompt_tokens": p, "output_tokens": 1, "concurrency": c})
			}
		}
		for _, p := range []int{128, 1024} {
			for _, c := range []int{1, 4, 8} {
				conds = append(conds, map[string]any{"phase": "decode", "prompt_tokens": p, "output_tokens": 128, "concurrency": c})
			}
		}
		b.Manifest.Set("conditions", edit(conds))
	}
}

// bundleVariants lists the valid bundle, the changes that must still load
// and one change per validation rule that must be rejected.
var bundleVariants = []bundleVariant{
	// Variants that load.
	{name: "valid_crlf", measured: true, edit: func(*profiletest.Bundle) {}},
	{name: "valid_lf", measured: true, edit: func(b *profiletest.Bundle) { b.LineEnding = "\n" }},
	{name: "valid_lone_cr", measured: true, edit: func(b *profiletest.Bundle) { b.LineEnding = "\r" }},
	{name: "manifest_named_after_csv", measured: true, edit: func(b *profiletest.Bundle) { b.ManifestName = "l4_profile.json" }},
	{name: "modeled_clocks_key_absent", measured: true, edit: deleteManifest("modeled_graphics_clocks_mhz")},
	{name: "extra_checksum_existing_file", measured: true, edit: func(b *profiletest.Bundle) {
		b.Extra = map[string][]byte{"README.txt": []byte("notes\n")}
		setChecksums("", sameHex, `"README.txt": "`+profiletest.SHA256([]byte("notes\n"))+`"`)(b)
	}},
	{name: "proxy_status", measured: false, edit: setManifest("profile_status", "engineering_proxy_not_measured")},
	{name: "raw_schema_as_proxy", measured: false, edit: func(b *profiletest.Bundle) {
		b.Profile = b.Raw
		b.Profile.Rows = slices.DeleteFunc(slices.Clone(b.Raw.Rows), func(r []string) bool { return r[4] == "2100" })
		b.Manifest.Set("profile_status", "engineering_proxy_not_measured")
		b.Manifest.Set("idle_power_w", 17.5)
	}},
	{name: "raw_schema_no_manifest_idle_fallback", measured: false, edit: func(b *profiletest.Bundle) {
		b.Profile = b.Raw
		b.Profile.Rows = slices.DeleteFunc(slices.Clone(b.Raw.Rows), func(r []string) bool { return r[4] == "2100" })
		b.ManifestName = ""
	}},
	{name: "quoted_fields", measured: true, edit: func(b *profiletest.Bundle) {
		b.Raw.Set(0, "ttft_s", `0,041 "approx"`)
		b.Telemetry.Set(3, "utc", "2026-03-14T18:00:00Z\r\nresumed")
	}},
	{name: "schema_version_float", measured: true, edit: setManifestRaw("schema_version", "2.0")},
	{name: "warmup_true_equals_one", measured: true, edit: setManifestRaw("warmup_batches_per_condition", "true")},
	{name: "checksum_uppercase_hex", measured: true, edit: setChecksums("", strings.ToUpper)},
	{name: "digest_bare_with_trailing_newline", measured: true, edit: setManifest("vllm_image_digest", "sha256:"+strings.Repeat("ab", 32)+"\n")},
	{name: "fallback_text_spaced_upper", measured: true, edit: func(b *profiletest.Bundle) {
		for i := range b.Raw.Rows {
			if b.Raw.Get(i, "telemetry_fallback_used") == "false" {
				b.Raw.Set(i, "telemetry_fallback_used", " FALSE\u00a0")
			}
		}
	}},
	{name: "python_number_syntax", measured: true, edit: func(b *profiletest.Bundle) {
		i := rawRow(b, "1200", "prefill", "1", "3")
		b.Raw.Set(i, "requested_clock_mhz", "1_200")
		b.Raw.Set(i, "repeat", " 3 ")
		b.Raw.Set(i, "realized_clock_mhz", b.Raw.Get(i, "realized_clock_mhz")+"e0")
	}},
	{name: "nan_literal_elsewhere_in_manifest", measured: true, edit: setManifestRaw("notes", `{"ambient_temp_c": NaN, "limit": Infinity}`)},
	{name: "profile_columns_as_object", measured: true, edit: setManifestRaw("profile_columns", `{"clock_mhz": 1, "prefill_tokens_per_s": 1, "decode_tokens_per_s": 1, "idle_power_w": 1, "prefill_power_w": 1, "decode_power_w": 1}`)},
	{name: "gpu_name_list", measured: true, edit: setManifest("gpu", map[string]any{"name": []string{"NVIDIA L4"}})},
	{name: "condition_numbers_as_strings", measured: true, edit: conditionsWith(func(c []map[string]any) []map[string]any {
		c[0]["prompt_tokens"] = " 128 "
		return c
	})},
	{name: "row_count_as_string", measured: true, edit: editAfterDerive(func(m *profiletest.Manifest) { m.Set("row_count", "1950") })},
	{name: "blank_lines_in_raw", measured: true, edit: func(b *profiletest.Bundle) {
		b.Raw.Rows = slices.Insert(b.Raw.Rows, 10, []string{})
		b.Freeze[profiletest.DeriveRowCount] = true
		b.AfterDerive = func(m *profiletest.Manifest) { m.Set("row_count", 1950) }
	}},
	{name: "telemetry_nul_byte", measured: true, edit: func(b *profiletest.Bundle) { b.Telemetry.Set(2, "phase", "idle\x00") }},
	{name: "row_count_float_truncates", measured: true, edit: editAfterDerive(func(m *profiletest.Manifest) { m.SetRaw("row_count", "1950.7") })},
	{name: "fallback_count_as_string", measured: true, edit: editAfterDerive(func(m *profiletest.Manifest) { m.Set("telemetry_fallback_batch_count", " 5 ") })},
	{name: "condition_prompt_float_truncates", measured: true, edit: conditionsWith(func(c []map[string]any) []map[string]any {
		c[2]["prompt_tokens"] = 128.9
		return c
	})},
	{name: "gpu_name_lowercase_with_suffix", measured: true, edit: setManifest("gpu", map[string]any{"name": "nvidia l4 (24 GB)"})},
	{name: "realized_mapping_python_keys", measured: true, edit: editAfterDerive(func(m *profiletest.Manifest) {
		m.SetRaw("clock_profile_selection", `{"realized_clock_median_mhz_by_requested": {"1_200": 1186.25, " 1500 ": "1486.25", "1800.0": 1786.25, "2040": 2011.25, "2100": 2011.25}}`)
	})},
	{name: "duplicate_manifest_key_last_wins", measured: true, edit: func(b *profiletest.Bundle) {
		b.Manifest.Delete("status")
		b.Manifest.SetRaw("schema_version", `2, "status": "partial", "status": "complete"`)
	}},
	{name: "raw_huge_sample_count", measured: true, edit: func(b *profiletest.Bundle) {
		i := rawRow(b, "2040", "decode", "8", "0")
		for j := i; j < i+8; j++ {
			b.Raw.Set(j, "telemetry_sample_count", "99999999999999999999999")
		}
	}},
	{name: "raw_integer_spellings", measured: true, edit: func(b *profiletest.Bundle) {
		i := rawRow(b, "1200", "decode", "1", "2")
		b.Raw.Set(i, "repeat", "+2")
		b.Raw.Set(i, "prompt_tokens", "0128")
		b.Raw.Set(i, "concurrency", "١")
	}},

	// One change per rule, each rejected for its own reason.
	{name: "manifest_top_level_list", failsAt: "manifest", edit: func(b *profiletest.Bundle) {
		b.AfterChecksums = func(files map[string][]byte) {
			b.ManifestName = ""
			files["profile_manifest.json"] = []byte("[1, 2]\n")
		}
	}},
	{name: "manifest_bom", failsAt: "manifest", edit: func(b *profiletest.Bundle) {
		b.AfterChecksums = func(files map[string][]byte) {
			b.ManifestName = ""
			files["profile_manifest.json"] = append([]byte("\ufeff"), b.Manifest.Bytes()...)
		}
	}},
	{name: "telemetry_invalid_utf8", failsAt: "telemetry_csv", edit: func(b *profiletest.Bundle) { b.Telemetry.Set(1, "phase", "idle\xff") }},
	{name: "raw_field_over_limit", failsAt: "raw_csv", edit: func(b *profiletest.Bundle) { b.Raw.Set(5, "ttft_s", strings.Repeat("9", 131073)) }},
	{name: "checksum_names_a_folder", failsAt: "sha256 subdir", edit: func(b *profiletest.Bundle) {
		b.Extra = map[string][]byte{"subdir/x": []byte("x")}
		setChecksums("", sameHex, `"subdir": "`+strings.Repeat("0", 64)+`"`)(b)
	}},
	{name: "repeats_as_string", failsAt: "repeats", edit: setManifest("measured_repeats_per_condition", "5")},
	{name: "server_args_nested", failsAt: "vllm_server_arguments", edit: setManifestRaw("vllm_server_arguments", `[["--no-enable-prefix-caching"]]`)},
	{name: "realized_mapping_duplicate_level", failsAt: "realized_medians_declared", edit: editAfterDerive(func(m *profiletest.Manifest) {
		m.SetRaw("clock_profile_selection", `{"realized_clock_median_mhz_by_requested": {"1200": 1186.25, "1200.0": 1186.25, "1500": 1486.25, "1800": 1786.25, "2040": 2011.25}}`)
	})},
	{name: "raw_phase_leading_space", failsAt: "raw_rows", edit: editRaw("decode", "1", "phase", " decode")},
	{name: "raw_proxy_nan_clock", failsAt: "profile_table", edit: func(b *profiletest.Bundle) {
		b.Profile = b.Raw
		b.Profile.Rows = slices.DeleteFunc(slices.Clone(b.Raw.Rows), func(r []string) bool { return r[4] == "2100" })
		b.Profile.Rows[7] = slices.Clone(b.Profile.Rows[7])
		b.Profile.Rows[7][4] = "nan"
		b.Manifest.Set("profile_status", "engineering_proxy_not_measured")
	}},
	{name: "raw_proxy_missing_column", failsAt: "profile_table", edit: func(b *profiletest.Bundle) {
		b.Profile.Header = []string{"clock_mhz", "phase", "total_s"}
		b.Manifest.Set("profile_status", "engineering_proxy_not_measured")
	}},
	{name: "manifest_status_partial", failsAt: "manifest_status", edit: setManifest("status", "partial")},
	{name: "profile_status_only_in_csv", failsAt: "manifest_profile_status", edit: func(b *profiletest.Bundle) {
		b.Manifest.Delete("profile_status")
		b.Profile.Header = append(b.Profile.Header, "profile_status")
		for i := range b.Profile.Rows {
			b.Profile.Rows[i] = append(b.Profile.Rows[i], "measured_l4")
		}
	}},
	{name: "measured_csv_without_manifest", failsAt: "profile_status", edit: func(b *profiletest.Bundle) {
		b.ManifestName = ""
		b.Profile.Header = append(b.Profile.Header, "profile_status")
		for i := range b.Profile.Rows {
			b.Profile.Rows[i] = append(b.Profile.Rows[i], "measured_l4")
		}
	}},
	{name: "schema_version_3", failsAt: "schema_version", edit: setManifest("schema_version", 3)},
	{name: "schema_version_string", failsAt: "schema_version", edit: setManifest("schema_version", "2")},
	{name: "profile_columns_reordered", failsAt: "profile_columns", edit: setManifest("profile_columns", []string{"clock_mhz", "decode_tokens_per_s", "prefill_tokens_per_s", "idle_power_w", "prefill_power_w", "decode_power_w"})},
	{name: "raw_profile_columns_short", failsAt: "raw_profile_columns", edit: setManifest("raw_profile_columns", profiletest.RawColumns[:18])},
	{name: "aggregate_extra_column", failsAt: "aggregate_schema", edit: func(b *profiletest.Bundle) {
		b.Profile.Header = append(b.Profile.Header, "note")
		for i := range b.Profile.Rows {
			b.Profile.Rows[i] = append(b.Profile.Rows[i], "x")
		}
	}},
	{name: "aggregate_bom", failsAt: "aggregate_schema", edit: func(b *profiletest.Bundle) { b.Profile.Header[0] = "\ufeff" + b.Profile.Header[0] }},
	{name: "gpu_a10g", failsAt: "gpu", edit: setManifest("gpu", map[string]any{"name": "NVIDIA A10G"})},
	{name: "gpu_not_mapping", failsAt: "gpu", edit: setManifest("gpu", "NVIDIA L4")},
	{name: "model_other", failsAt: "model", edit: setManifest("model", "Qwen/Qwen2.5-7B")},
	{name: "model_revision_other", failsAt: "model_revision", edit: setManifest("model_revision", "main")},
	{name: "vllm_image_other", failsAt: "vllm_image", edit: setManifest("vllm_image", "vllm/vllm-openai:latest")},
	{name: "digest_unresolved", failsAt: "vllm_image_digest", edit: setManifest("vllm_image_digest", "vllm/vllm-openai:v0.28.0")},
	{name: "digest_short", failsAt: "vllm_image_digest", edit: setManifest("vllm_image_digest", "sha256:"+strings.Repeat("ab", 31))},
	{name: "prefix_caching_enabled", failsAt: "prefix_caching_disabled", edit: setManifest("vllm_prefix_caching_enabled", true)},
	{name: "prefix_caching_zero", failsAt: "prefix_caching_disabled", edit: setManifest("vllm_prefix_caching_enabled", 0)},
	{name: "prefix_caching_absent", failsAt: "prefix_caching_disabled", edit: deleteManifest("vllm_prefix_caching_enabled")},
	{name: "server_args_without_flag", failsAt: "vllm_server_arguments", edit: setManifest("vllm_server_arguments", []string{"--model", "Qwen/Qwen2.5-7B-Instruct"})},
	{name: "server_args_string", failsAt: "vllm_server_arguments", edit: setManifest("vllm_server_arguments", "--no-enable-prefix-caching")},
	{name: "sweep_unordered", failsAt: "clock_sweep", edit: setManifest("selected_graphics_clocks_mhz", []float64{1200, 1800, 1500, 2040, 2100})},
	{name: "sweep_text", failsAt: "clock_sweep", edit: setManifestRaw("selected_graphics_clocks_mhz", `[1200, 1500, "fast", 2040, 2100]`)},
	{name: "sweep_null", failsAt: "clock_sweep", edit: setManifestRaw("selected_graphics_clocks_mhz", `[1200, 1500, null, 2040, 2100]`)},
	{name: "modeled_three_levels", failsAt: "modeled_clocks", edit: func(b *profiletest.Bundle) {
		b.Profile.Rows = b.Profile.Rows[:3]
		b.Manifest.Set("modeled_graphics_clocks_mhz", profiletest.ModeledMHz[:3])
	}},
	{name: "modeled_level_not_in_sweep", failsAt: "modeled_subset", edit: func(b *profiletest.Bundle) { b.Profile.Set(0, "clock_mhz", "1250") }},
	{name: "modeled_declared_differs", failsAt: "modeled_graphics_clocks", edit: setManifest("modeled_graphics_clocks_mhz", []float64{1200, 1500, 1800, 2100})},
	{name: "repeats_four", failsAt: "repeats", edit: setManifest("measured_repeats_per_condition", 4)},
	{name: "warmup_two", failsAt: "warmup", edit: setManifest("warmup_batches_per_condition", 2)},
	{name: "conditions_missing_one", failsAt: "conditions", edit: conditionsWith(func(c []map[string]any) []map[string]any { return c[1:] })},
	{name: "conditions_extra_one", failsAt: "conditions", edit: conditionsWith(func(c []map[string]any) []map[string]any {
		return append(c, map[string]any{"phase": "prefill", "prompt_tokens": 8192, "output_tokens": 1, "concurrency": 1})
	})},
	{name: "condition_not_mapping", failsAt: "conditions", edit: conditionsWith(func(c []map[string]any) []map[string]any { c[3] = nil; return c })},
	{name: "checksums_absent", failsAt: "checksums_listed", edit: editAfterDerive(func(m *profiletest.Manifest) { m.Delete("sha256") })},
	{name: "checksum_telemetry_unlisted", failsAt: "checksums_listed", edit: setChecksums("l4_telemetry.csv", sameHex)},
	{name: "checksum_unsafe_name", failsAt: "sha256 ../l4_telemetry.csv", edit: setChecksums("", sameHex, `"../l4_telemetry.csv": "`+strings.Repeat("0", 64)+`"`)},
	{name: "checksum_not_hex", failsAt: "sha256 l4_profile.csv", edit: setChecksums("", func(h string) string { return h[:63] + "g" })},
	{name: "checksum_mismatch_telemetry", failsAt: "sha256 l4_telemetry.csv", edit: func(b *profiletest.Bundle) {
		b.AfterChecksums = func(files map[string][]byte) {
			files["l4_telemetry.csv"] = append(files["l4_telemetry.csv"], []byte("9.9,x,idle,1,1,1,1,1,1\r\n")...)
		}
	}},
	{name: "checksum_extra_missing_file", failsAt: "sha256 notes.txt", edit: setChecksums("", sameHex, `"notes.txt": "`+strings.Repeat("0", 64)+`"`)},
	{name: "all_requested_missing", failsAt: "sha256 l4_profile_all_requested.csv", edit: func(b *profiletest.Bundle) {
		b.AfterChecksums = func(files map[string][]byte) { files["l4_profile_all_requested.csv"] = nil }
	}},
	{name: "all_requested_schema", failsAt: "all_requested_csv", edit: func(b *profiletest.Bundle) { b.AllRequested.Header[5] = "decode_w" }},
	{name: "all_requested_clocks_differ", failsAt: "full_profile_clocks", edit: func(b *profiletest.Bundle) { b.AllRequested.Set(4, "clock_mhz", "2115") }},
	{name: "all_requested_negative_value", failsAt: "full_profile_values", edit: func(b *profiletest.Bundle) { b.AllRequested.Set(4, "idle_power_w", "-1") }},
	{name: "modeled_row_differs", failsAt: "modeled_rows_match", edit: func(b *profiletest.Bundle) {
		b.Profile.Set(2, "decode_power_w", b.Profile.Get(2, "decode_power_w")+"01")
	}},
	{name: "raw_schema_reordered", failsAt: "raw_csv", edit: func(b *profiletest.Bundle) {
		b.Raw.Header[7], b.Raw.Header[8] = b.Raw.Header[8], b.Raw.Header[7]
	}},
	{name: "telemetry_header_only", failsAt: "telemetry_csv", edit: func(b *profiletest.Bundle) { b.Telemetry.Rows = nil }},
	{name: "row_count_off_by_one", failsAt: "row_count", edit: editAfterDerive(func(m *profiletest.Manifest) { m.Set("row_count", 1949) })},
	{name: "telemetry_row_count_off", failsAt: "telemetry_row_count", edit: editAfterDerive(func(m *profiletest.Manifest) { m.Set("telemetry_row_count", 41) })},
	{name: "raw_clock_not_in_sweep", failsAt: "raw_rows", edit: editRaw("prefill", "4", "requested_clock_mhz", "1501")},
	{name: "raw_realized_negative", failsAt: "raw_rows", edit: editRaw("decode", "8", "realized_clock_mhz", "-1480")},
	{name: "raw_realized_nan", failsAt: "raw_rows", edit: editRaw("decode", "8", "realized_clock_mhz", "nan")},
	{name: "raw_condition_outside_matrix", failsAt: "raw_rows", edit: editRaw("prefill", "1", "prompt_tokens", "256")},
	{name: "raw_phase_uppercase", failsAt: "raw_rows", edit: editRaw("prefill", "1", "phase", "PREFILL")},
	{name: "raw_repeat_float_text", failsAt: "raw_rows", edit: editRaw("prefill", "1", "repeat", "2.0")},
	{name: "raw_sample_count_zero", failsAt: "raw_rows", edit: editRaw("decode", "4", "telemetry_sample_count", "0")},
	{name: "raw_fallback_maybe", failsAt: "raw_rows", edit: editRaw("decode", "4", "telemetry_fallback_used", "maybe")},
	{name: "raw_fallback_varies_in_batch", failsAt: "raw_rows", edit: func(b *profiletest.Bundle) {
		i := rawRow(b, "1500", "decode", "4", "2")
		b.Raw.Set(i+1, "telemetry_fallback_used", "true")
	}},
	{name: "raw_short_row", failsAt: "raw_rows", edit: func(b *profiletest.Bundle) {
		i := rawRow(b, "1500", "decode", "4", "2")
		b.Raw.Rows[i] = b.Raw.Rows[i][:15]
	}},
	{name: "raw_missing_batch", failsAt: "repetition_matrix", edit: func(b *profiletest.Bundle) {
		i := rawRow(b, "1800", "prefill", "1", "4")
		b.Raw.Rows = slices.Delete(b.Raw.Rows, i, i+1)
	}},
	{name: "raw_multiplicity_short", failsAt: "repetition_matrix", edit: func(b *profiletest.Bundle) {
		i := rawRow(b, "1800", "prefill", "4", "1")
		b.Raw.Rows = slices.Delete(b.Raw.Rows, i, i+1)
	}},
	{name: "fallback_batch_count_off", failsAt: "telemetry_fallback_batch_count", edit: editAfterDerive(func(m *profiletest.Manifest) { m.Set("telemetry_fallback_batch_count", 0) })},
	{name: "modeled_plateau_not_increasing", failsAt: "realized_medians_increasing", edit: func(b *profiletest.Bundle) {
		b.Profile.Rows = slices.Clone(b.AllRequested.Rows)
		b.Manifest.Set("modeled_graphics_clocks_mhz", profiletest.SweepMHz)
	}},
	{name: "realized_selection_absent", failsAt: "realized_medians_declared", edit: editAfterDerive(func(m *profiletest.Manifest) { m.Delete("clock_profile_selection") })},
	{name: "realized_mapping_absent", failsAt: "realized_medians_declared", edit: editAfterDerive(func(m *profiletest.Manifest) { m.Set("clock_profile_selection", map[string]any{"method": "x"}) })},
	{name: "realized_mapping_text", failsAt: "realized_medians_declared", edit: editAfterDerive(func(m *profiletest.Manifest) {
		m.SetRaw("clock_profile_selection", `{"realized_clock_median_mhz_by_requested": {"1200": "fast", "1500": 1486.25, "1800": 1786.25, "2040": 2011.25}}`)
	})},
	{name: "realized_mapping_missing_level", failsAt: "realized_medians_declared", edit: editAfterDerive(func(m *profiletest.Manifest) {
		m.SetRaw("clock_profile_selection", `{"realized_clock_median_mhz_by_requested": {"1200": 1186.25, "1500": 1486.25, "2040": 2011.25}}`)
	})},
	{name: "realized_mapping_mismatch", failsAt: "realized_medians_match", edit: editAfterDerive(func(m *profiletest.Manifest) {
		m.SetRaw("clock_profile_selection", `{"realized_clock_median_mhz_by_requested": {"1200": 1186.25, "1500": 1487.25, "1800": 1786.25, "2040": 2011.25}}`)
	})},
	{name: "measured_on_absent", failsAt: "measured_on", edit: deleteManifest("measured_on")},
	{name: "completed_utc_blank", failsAt: "completed_utc", edit: setManifest("completed_utc", " \t ")},
	{name: "manifest_trailing_comma", failsAt: "manifest", edit: editAfterDerive(func(m *profiletest.Manifest) { m.SetRaw("completed_utc", `["2026-03-14",]`) })},
	{name: "profile_header_only", failsAt: "profile_csv", edit: func(b *profiletest.Bundle) { b.Profile.Rows = nil }},
	{name: "decode_rate_not_increasing", failsAt: "profile_values", edit: func(b *profiletest.Bundle) { setBoth(b, 2, "decode_tokens_per_s", "30") }},
	{name: "baseline_ttft_text", failsAt: "profile_values", edit: setManifest("baseline_ttft_s", "fast")},
	{name: "baseline_tpot_zero", failsAt: "profile_values", edit: setManifest("baseline_tpot_s", 0)},
	{name: "raw_proxy_lacks_decode", failsAt: "profile_table", edit: func(b *profiletest.Bundle) {
		b.Profile = b.Raw
		b.Profile.Rows = slices.DeleteFunc(slices.Clone(b.Raw.Rows), func(r []string) bool { return r[4] == "2100" || (r[4] == "1200" && r[0] == "decode") })
		b.Manifest.Set("profile_status", "engineering_proxy_not_measured")
	}},
	{name: "raw_proxy_plateau_not_increasing", failsAt: "profile_values", edit: func(b *profiletest.Bundle) {
		b.Profile = b.Raw
		b.Manifest.Set("profile_status", "engineering_proxy_not_measured")
	}},
}

// checksums returns the SHA-256 of every file Write produces, before any
// AfterDerive edit.
func checksums(b *profiletest.Bundle) map[string]string {
	saved := b.AfterDerive
	b.AfterDerive = nil
	defer func() { b.AfterDerive = saved }()
	out := map[string]string{}
	for name, data := range b.Files() {
		out[name] = profiletest.SHA256(data)
	}
	return out
}

// checksumObject is the manifest's sha256 object for the bundle's four CSV
// files (hash transformed by hex) followed by extra raw entries.
func checksumObject(b *profiletest.Bundle, skip string, hex func(string) string, extra ...string) string {
	sums := checksums(b)
	var parts []string
	for _, name := range profiletest.CSVFiles {
		if name != skip {
			parts = append(parts, `"`+name+`": "`+hex(sums[name])+`"`)
		}
	}
	return "{" + strings.Join(append(parts, extra...), ", ") + "}"
}

func sameHex(h string) string { return h }

// setChecksums replaces the manifest's sha256 object after Write set it.
func setChecksums(skip string, hex func(string) string, extra ...string) func(*profiletest.Bundle) {
	return func(b *profiletest.Bundle) {
		b.AfterDerive = func(m *profiletest.Manifest) { m.SetRaw("sha256", checksumObject(b, skip, hex, extra...)) }
	}
}
