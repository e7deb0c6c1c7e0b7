package dev.xlac.architecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.List;

/** The compiled main classes of every xlac module, as the architecture rules check them: no tests, no fixtures. */
final class ProductClasses {
  /** Top-level packages that are not part of the product: test suites, benchmarks and these rules. */
  private static final List<String> NOT_PRODUCT = List.of("e2e", "faults", "bench", "architecture");

  private static JavaClasses all;

  private ProductClasses() {}

  /** Every product class under {@code dev.xlac} (imported once per test JVM). */
  static synchronized JavaClasses all() {
    if (all == null) {
      all = new ClassFileImporter()
          .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
          .withImportOption(location -> !location.contains("-tests.jar")) // other modules' test-jars (TestModules)
          .withImportOption(location -> NOT_PRODUCT.stream().noneMatch(p -> location.contains("/dev/xlac/" + p + "/")))
          .importPackages("dev.xlac");
    }
    return all;
  }
}
