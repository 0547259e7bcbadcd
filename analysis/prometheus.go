package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/prometheus/common/model"
)

// query runs q as an instant query at Prometheus' own time and makes its
// answer a result:
//   - a scalar: the number;
//   - a vector of one sample: its value;
//   - a vector of several: their values, ordered by label set, so that
//     result[0] is always the same series;
//   - an empty vector: an error, "query returned no data", so that a
//     missing series never passes a condition such as "result < 0.01";
//   - NaN (the scalar or the one sample): an error; a ratio over a window
//     without requests is 0/0;
//   - a matrix or a string: an error.
//
// Warnings alone are not an error.
func (m *Measurer) query(ctx context.Context, q string) (any, error) {
	if m.prom == nil {
		return nil, m.promErr
	}
	v, _, err := m.prom.Query(ctx, q, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("query Prometheus: %w", err)
	}
	switch x := v.(type) {
	case *model.Scalar:
		return number1(float64(x.Value))
	case model.Vector:
		switch len(x) {
		case 0:
			return nil, errors.New("query returned no data")
		case 1:
			return number1(float64(x[0].Value))
		}
		samples := append(model.Vector(nil), x...)
		sort.Slice(samples, func(i, j int) bool { return samples[i].Metric.Before(samples[j].Metric) })
		values := make([]float64, len(samples))
		for i, s := range samples {
			values[i] = float64(s.Value)
		}
		return values, nil
	case model.Matrix:
		return nil, errors.New("query returned a range vector (matrix): want an instant vector or a scalar")
	case *model.String:
		return nil, errors.New("query returned a string: want an instant vector or a scalar")
	}
	return nil, fmt.Errorf("query returned a %T: want an instant vector or a scalar", v)
}

// number1 is the one number a query returned: NaN is an error.
func number1(f float64) (any, error) {
	if math.IsNaN(f) {
		return nil, errors.New("query returned NaN (no data in the window?)")
	}
	return f, nil
}
