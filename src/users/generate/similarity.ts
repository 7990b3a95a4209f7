/** Words too common in goals to tell two goals apart. */
const FILLER = new Set([
  "a",
  "an",
  "and",
  "are",
  "as",
  "at",
  "be",
  "by",
  "for",
  "from",
  "have",
  "i",
  "in",
  "is",
  "it",
  "its",
  "me",
  "my",
  "of",
  "on",
  "or",
  "so",
  "that",
  "the",
  "their",
  "this",
  "to",
  "want",
  "was",
  "were",
  "with",
  "you",
  "your",
]);

/** A goal's distinct words: lower case, letters and digits only, filler words left out. */
export function goalTokens(text: string): Set<string> {
  const words = text
    .normalize("NFKC")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "" && !FILLER.has(word));
  return new Set(words);
}

/** Jaccard similarity of two goals' word sets (1 when both are empty). */
export function goalSimilarity(a: string, b: string): number {
  const x = goalTokens(a);
  const y = goalTokens(b);
  if (x.size === 0 && y.size === 0) return 1;
  let shared = 0;
  for (const word of x) if (y.has(word)) shared += 1;
  return shared / (x.size + y.size - shared);
}
