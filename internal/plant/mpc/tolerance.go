package mpc

// The plant's tolerances, which the model follows as the plant does:
// plant.TimeEpsilonS and plant.PowerEpsilonW, restated because package
// plant imports this one. plant's TestMPCToleranceIsThePlants keeps them
// equal; their doc comments say why they are what they are.
const (
	// TimeEpsilonS is plant.TimeEpsilonS, seconds: an arrival within it
	// after a time has arrived by then, and a step belongs to control
	// period floor((time + TimeEpsilonS) / period).
	TimeEpsilonS = 1e-12
	// PowerEpsilonW is plant.PowerEpsilonW, watts: a level whose power
	// exceeds the limit by at most PowerEpsilonW is within it.
	PowerEpsilonW = 1e-12
)
