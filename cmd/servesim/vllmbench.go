package main

import (
	"servesim/internal/fleet"
	"servesim/internal/plant"
	"servesim/internal/vllmbench"
)

// formatVLLMBench is simulate's --format for the keys of the result JSON
// of `vllm bench serve` (see package vllmbench).
const formatVLLMBench = "vllm-bench"

// writePlantVLLMBench writes a single-GPU run as vllm bench's result JSON.
func writePlantVLLMBench(s *streams, out outputOptions, report *plant.Report) error {
	doc, err := vllmbench.FromPlant(&report.Result)
	if err != nil {
		return internalError{err}
	}
	return writeJSON(s, out, doc)
}

// writeFleetVLLMBench writes a fleet run as vllm bench's result JSON, its
// requests judged by slo (a zero objective: the serving replica's
// profile's).
func writeFleetVLLMBench(s *streams, out outputOptions, report *fleet.Report, slo plant.SLO) error {
	return writeJSON(s, out, vllmbench.FromFleet(report.Result, slo))
}
