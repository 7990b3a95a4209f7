import { type ErrorCounts, ErrorTally } from "../../core/error-tally.js";
import type { EnvSimPrediction, EnvSimSample } from "./types.js";

/**
 * The errored predictions of one simulator over a benchmark's samples (every sample, grouped or not): a
 * prediction that carries an error, by its kind (`errorKind`, else `prediction_error`), and a sample with
 * no prediction at all (`no_prediction`). Errored predictions score FM = CM = false.
 */
export function predictionErrors(
  samples: readonly EnvSimSample[],
  predictions: ReadonlyMap<string, EnvSimPrediction>,
): ErrorCounts {
  const tally = new ErrorTally();
  for (const sample of samples) {
    const prediction = predictions.get(sample.id);
    if (!prediction)
      tally.add(sample.id, "no_prediction", "the predictions file has no line for this sample");
    else if (prediction.error !== undefined)
      tally.add(sample.id, prediction.errorKind ?? "prediction_error", prediction.error);
  }
  return tally.counts();
}
