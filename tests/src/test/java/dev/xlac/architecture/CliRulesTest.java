package dev.xlac.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import dev.xlac.capture.CommandTracer;
import dev.xlac.capture.DumpWatcher;
import dev.xlac.cli.archfixture.Orchestrates;
import dev.xlac.compiler.CompilerDriver;
import dev.xlac.compiler.schedule.CompileScheduler;
import dev.xlac.compiler.schedule.DriverFactory;
import dev.xlac.hlo.DumpDirectoryReader;
import dev.xlac.hlo.HloBatchReader;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * No orchestration in the CLI: it parses, calls the pipeline, prints and returns the exit code. The
 * scheduler, the drivers, the tracer, the batch reader and the cache's storage engine are the
 * pipeline's (or the cache's) to use; and the pipeline never reaches back into the CLI.
 */
class CliRulesTest {
  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  /** The rule, also checked against a fixture below so that it is known to catch what it names. */
  static ArchRule noOrchestrationInCli() {
    return noClasses().that().resideInAPackage("dev.xlac.cli..")
        .should().dependOnClassesThat().belongToAnyOf(CompileScheduler.class, DriverFactory.class, CompilerDriver.class,
            CommandTracer.class, DumpWatcher.class, HloBatchReader.class, DumpDirectoryReader.class)
        .orShould().dependOnClassesThat().resideInAnyPackage("dev.xlac.compiler.pjrt..", "dev.xlac.compiler.neuron..",
            "dev.xlac.cache.store..")
        .because("the CLI only parses, calls the pipeline and prints");
  }

  @Test
  void theImport_seesBothModules() {
    assertThat(product.stream().filter(c -> c.getPackageName().startsWith("dev.xlac.cli"))).hasSizeGreaterThan(20);
    assertThat(product.stream().filter(c -> c.getPackageName().startsWith("dev.xlac.pipeline"))).hasSizeGreaterThan(10);
  }

  @Test
  void cli_holdsNoOrchestration() {
    noOrchestrationInCli().check(product);
  }

  @Test
  void orchestrationInCli_isReported() {
    assertThatThrownBy(() -> noOrchestrationInCli().check(new ClassFileImporter().importClasses(Orchestrates.class)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(Orchestrates.class.getName())
        .hasMessageContaining(CompileScheduler.class.getName());
  }

  @Test
  void pipeline_neverSeesTheCli() {
    noClasses().that().resideInAPackage("dev.xlac.pipeline..")
        .should().dependOnClassesThat().resideInAPackage("dev.xlac.cli..")
        .check(product);
  }
}
