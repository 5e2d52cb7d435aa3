package fleet

func (e *engine) runElasticDisaggregated() (*Result, error) { return nil, errNoPoolScaling }
