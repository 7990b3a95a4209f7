/**
 * `terrarium users test` as a library: finding the test files, running every test (and run) against one
 * agent in a pool, the run folder (transcripts, summary.json, report.html) and the JUnit XML for CI. One
 * test is run by `runScenarioTest` (src/users/testing).
 */
export {
  type DiscoveredTestFiles,
  discoverTestFiles,
  mentionsScript,
  type TestFileCandidate,
} from "./discover.js";
export {
  type JUnitOutcome,
  type JUnitReport,
  type JUnitTestCase,
  type JUnitTestSuite,
  renderJUnitXml,
} from "./junit.js";
export {
  type CollectedScenarioTests,
  collectScenarioTests,
  type LoadedScenarioTest,
  type RunScenarioTestsOptions,
  type RunScenarioTestsResult,
  runScenarioTests,
  type TestRunRecord,
  type TestRunStatus,
  type TestsSummary,
  USERS_TEST_RUN_KIND,
  USERS_TEST_SCHEMA_VERSION,
  type UsersTestSummary,
} from "./run-tests.js";
