package dev.xlac.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.library.Architectures.LayeredArchitecture;
import dev.xlac.cli.Main;
import dev.xlac.core.ExitCode;
import dev.xlac.core.archfixture.WrongWay;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The modules' one-way data flow, checked on the compiled main classes of every module:
 * {@code cli -> pipeline -> {capture, cache, compiler} -> {hlo, runtime} -> core}. Maven's module edges already reject most
 * wrong-way imports at compile time; these rules also catch what they cannot see (a dependency a
 * module's pom allows but the layering does not, a new top-level package, cycles between packages,
 * picocli outside the CLI).
 */
class LayerTest {

  /**
   * The layers, each a package tree; Capture, Cache and Compiler never see each other, nor the
   * Pipeline that joins them; Runtime (the proxy's file formats) sees Core only, and only Cache,
   * Pipeline and the Cli (which prints the request keys the cache's listings carry) see it. An empty layer
   * fails the check, so a renamed package cannot make a layer pass by matching nothing.
   */
  static LayeredArchitecture layers() {
    return layeredArchitecture().consideringOnlyDependenciesInLayers()
        .layer("Core").definedBy("dev.xlac.core..")
        .layer("Hlo").definedBy("dev.xlac.hlo..")
        .layer("Runtime").definedBy("dev.xlac.runtime..")
        .layer("Capture").definedBy("dev.xlac.capture..")
        .layer("Cache").definedBy("dev.xlac.cache..")
        .layer("Compiler").definedBy("dev.xlac.compiler..")
        .layer("Pipeline").definedBy("dev.xlac.pipeline..")
        .layer("Cli").definedBy("dev.xlac.cli..")
        .whereLayer("Core").mayNotAccessAnyLayer()
        .whereLayer("Hlo").mayOnlyAccessLayers("Core")
        .whereLayer("Runtime").mayOnlyAccessLayers("Core")
        .whereLayer("Runtime").mayOnlyBeAccessedByLayers("Cache", "Pipeline", "Cli")
        .whereLayer("Capture").mayOnlyAccessLayers("Core", "Hlo")
        .whereLayer("Cache").mayOnlyAccessLayers("Core", "Hlo", "Runtime")
        .whereLayer("Compiler").mayOnlyAccessLayers("Core", "Hlo")
        .whereLayer("Pipeline").mayOnlyAccessLayers("Core", "Hlo", "Runtime", "Capture", "Cache", "Compiler")
        .whereLayer("Cli").mayNotBeAccessedByAnyLayer();
  }

  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  @Test
  void theImport_seesEveryModule() {
    // So that no rule below can pass because it saw nothing.
    assertThat(product.size()).isGreaterThan(200);
    for (String pkg : List.of("core", "hlo", "runtime", "capture", "cache", "compiler", "pipeline", "cli")) {
      assertThat(product.stream().filter(c -> c.getPackageName().startsWith("dev.xlac." + pkg))).as(pkg).isNotEmpty();
    }
    assertThat(product.stream().filter(c -> c.getSource().map(s -> s.getUri().toString().contains("test-classes"))
        .orElse(false))).as("test classes").isEmpty();
  }

  @Test
  void layers_pointOneWay() {
    layers().check(product);
  }

  @Test
  void core_dependsOnTheJdkOnly() {
    classes().that().resideInAPackage("dev.xlac.core..")
        .should().onlyDependOnClassesThat().resideInAnyPackage("dev.xlac.core..", "java..", "javax..", "jdk..", "sun.misc..")
        .check(product);
  }

  @Test
  void everyClass_isInALayer() {
    classes().should().resideInAnyPackage("dev.xlac.core..", "dev.xlac.hlo..", "dev.xlac.runtime..",
        "dev.xlac.capture..", "dev.xlac.cache..",
        "dev.xlac.compiler..", "dev.xlac.pipeline..", "dev.xlac.cli..")
        .check(product);
  }

  @Test
  void noCycles_betweenTopLevelPackages() {
    slices().matching("dev.xlac.(*)..").should().beFreeOfCycles().check(product);
  }

  @Test
  void picocli_onlyInCli() {
    ArchRule rule = noClasses().that().resideOutsideOfPackage("dev.xlac.cli..")
        .should().dependOnClassesThat().resideInAPackage("picocli..");
    rule.check(product);
  }

  @Test
  void wrongWayImport_isReported() {
    // Only two classes are imported here, so the other layers are empty: allowed for this check.
    LayeredArchitecture rule = layers().withOptionalLayers(true);
    // The CLI using core is fine ...
    assertThatCode(() -> rule.check(new ClassFileImporter().importClasses(ExitCode.class, Main.class)))
        .doesNotThrowAnyException();
    // ... a core class using the CLI is reported, by name.
    assertThatThrownBy(() -> rule.check(new ClassFileImporter().importClasses(WrongWay.class, Main.class)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(WrongWay.class.getName())
        .hasMessageContaining(Main.class.getName());
  }
}
