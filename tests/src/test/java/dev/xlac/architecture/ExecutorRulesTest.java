package dev.xlac.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import dev.xlac.cli.archfixture.DrivesTheExecutor;
import dev.xlac.compiler.schedule.CompileScheduler;
import dev.xlac.pipeline.LocalExecutor;
import dev.xlac.pipeline.archfixture.NamesTheRayEngine;
import dev.xlac.pipeline.archfixture.NamesTheSlurmEngine;
import dev.xlac.pipeline.archfixture.SchedulesItself;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One compile run, engines behind one interface: {@code CompileRuns} collects, settles, hands the rest to a
 * {@code CompileExecutor}, explains and reports. Local workers are started by {@link LocalExecutor} alone (no second
 * orchestration beside the run), and the CLI only picks an executor: it neither drives one nor reaches into the
 * Slurm executor's machinery (its client, shard plan, transports, array).
 */
class ExecutorRulesTest {
  /** The executor's steps and the Slurm executor's own parts, which only the run and the executor use. */
  private static final String EXECUTOR_INTERNALS = "dev\\.xlac\\.pipeline\\.(CompileExecutor\\$.*|CompileFeed.*"
      + "|slurm\\.(SlurmExecutor\\$.*|SlurmClient.*|SlurmEngine.*)|ray\\.(RayJobsClient.*|RayEngine.*)"
      + "|shard\\.(ShardPlan.*|ShardTransport.*|SharedDirectoryTransport.*|RemoteShardTransport.*|ShardRun.*"
      + "|ShardEngine.*|ShardedCompiles.*))";

  static final ArchRule ONLY_THE_LOCAL_EXECUTOR_SCHEDULES = noClasses()
      .that().resideOutsideOfPackage("dev.xlac.compiler.schedule..").and().doNotBelongToAnyOf(LocalExecutor.class)
      .should().dependOnClassesThat().belongToAnyOf(CompileScheduler.class)
      .because("compiles run where the run's executor puts them: local workers are LocalExecutor's, started by"
          + " CompileRuns when a program needs a compile");

  static final ArchRule CLI_ONLY_PICKS_AN_EXECUTOR = noClasses().that().resideInAPackage("dev.xlac.cli..")
      .should().dependOnClassesThat().haveNameMatching(EXECUTOR_INTERNALS)
      .because("the CLI builds an executor from its options and hands it to CompileRuns, which runs it");

  /** The Slurm engine is a package of its own: only the CLI, which builds it from its options, names it. */
  static final ArchRule ONLY_THE_CLI_NAMES_THE_SLURM_ENGINE = noClasses()
      .that().resideOutsideOfPackages("dev.xlac.pipeline.slurm..", "dev.xlac.cli..", "dev.xlac.bench..")
      .should().dependOnClassesThat().resideInAPackage("dev.xlac.pipeline.slurm..")
      .because("the compile run knows an engine only as a CompileExecutor: a new engine is a package beside it");

  /** The Ray engine likewise. */
  static final ArchRule ONLY_THE_CLI_NAMES_THE_RAY_ENGINE = noClasses()
      .that().resideOutsideOfPackages("dev.xlac.pipeline.ray..", "dev.xlac.cli..", "dev.xlac.bench..")
      .should().dependOnClassesThat().resideInAPackage("dev.xlac.pipeline.ray..")
      .because("the compile run knows an engine only as a CompileExecutor: a new engine is a package beside it");

  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  @Test
  void theImport_seesTheExecutors() {
    assertThat(product.stream().map(c -> c.getName())).contains("dev.xlac.pipeline.CompileExecutor",
        "dev.xlac.pipeline.LocalExecutor", "dev.xlac.pipeline.slurm.SlurmExecutor", "dev.xlac.pipeline.CompileRuns",
        "dev.xlac.cli.compile.ParallelCompileCommand");
  }

  @Test
  void onlyTheLocalExecutor_startsWorkers() {
    ONLY_THE_LOCAL_EXECUTOR_SCHEDULES.check(product);
  }

  @Test
  void theCli_onlyPicksAnExecutor() {
    CLI_ONLY_PICKS_AN_EXECUTOR.check(product);
  }

  @Test
  void theSlurmEngine_isNamedOnlyByTheCli() {
    ONLY_THE_CLI_NAMES_THE_SLURM_ENGINE.check(product);
  }

  @Test
  void theRayEngine_isNamedOnlyByTheCli() {
    assertThat(product.stream().map(c -> c.getName())).contains("dev.xlac.pipeline.ray.RayExecutor");
    ONLY_THE_CLI_NAMES_THE_RAY_ENGINE.check(product);
    assertThatThrownBy(() -> ONLY_THE_CLI_NAMES_THE_RAY_ENGINE.check(
        new ClassFileImporter().importClasses(NamesTheRayEngine.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(NamesTheRayEngine.class.getName());
  }

  @Test
  void eachRule_reportsAClassThatBreaksIt() {
    assertThatThrownBy(() -> ONLY_THE_CLI_NAMES_THE_SLURM_ENGINE.check(
        new ClassFileImporter().importClasses(NamesTheSlurmEngine.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(NamesTheSlurmEngine.class.getName());
    assertThatThrownBy(() -> ONLY_THE_LOCAL_EXECUTOR_SCHEDULES.check(
        new ClassFileImporter().importClasses(SchedulesItself.class, CompileScheduler.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(SchedulesItself.class.getName());
    assertThatThrownBy(() -> CLI_ONLY_PICKS_AN_EXECUTOR.check(
        new ClassFileImporter().importClasses(DrivesTheExecutor.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(DrivesTheExecutor.class.getName())
        .hasMessageContaining("dev.xlac.pipeline.CompileExecutor$Compiles")
        .hasMessageContaining("dev.xlac.pipeline.shard.ShardPlan");
  }
}
