/** The fixed corpus sample the corpus test and the catalog benchmark load: same seed, same files. */
export const CORPUS_SAMPLE_SIZE = 300;
export const CORPUS_SAMPLE_SEED = 11;
