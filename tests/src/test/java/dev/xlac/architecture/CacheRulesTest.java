package dev.xlac.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import dev.xlac.cache.CacheRepair;
import dev.xlac.cache.CacheStore;
import dev.xlac.cache.RunPins;
import dev.xlac.cache.layout.archfixture.ReachesPast;
import dev.xlac.cache.ops.archfixture.TalksToS3;
import dev.xlac.cache.remote.archfixture.ReachesTheStore;
import dev.xlac.cache.store.archfixture.CallsUp;
import dev.xlac.cache.store.Store;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The cache's own layering, on the compiled main classes: the facade {@code dev.xlac.cache} (with the
 * public value types) over {@code ops}, {@code bundle} and {@code layout}, all over {@code store}, the
 * one package that holds RocksDB. Nothing outside the cache reaches past the facade, and the store
 * never calls back up (the size limit is a hook the facade installs).
 */
class CacheRulesTest {
  private static final String[] CACHE_INTERNALS = {"dev.xlac.cache.store..", "dev.xlac.cache.ops..",
      "dev.xlac.cache.bundle.."};

  static final ArchRule NOTHING_OUTSIDE_USES_INTERNALS = noClasses().that().resideOutsideOfPackage("dev.xlac.cache..")
      .should().dependOnClassesThat().resideInAnyPackage(CACHE_INTERNALS)
      .because("other modules use the cache through CacheStore and its public value types");

  static final ArchRule STORE_DOES_NOT_CALL_UP = noClasses().that().resideInAPackage("dev.xlac.cache.store..")
      .should().dependOnClassesThat().resideInAnyPackage("dev.xlac.cache.ops..", "dev.xlac.cache.bundle..",
          "dev.xlac.cache.layout..", "dev.xlac.cache.remote..")
      .orShould().dependOnClassesThat().belongToAnyOf(CacheStore.class, RunPins.class, CacheRepair.class)
      .because("the store is the bottom of the cache: the facade, ops, bundles and layouts use it, never the other"
          + " way (it may use the root package's value types, records and exceptions)");

  static final ArchRule LAYOUTS_USE_THE_FACADE = noClasses().that().resideInAPackage("dev.xlac.cache.layout..")
      .should().dependOnClassesThat().resideInAnyPackage(CACHE_INTERNALS)
      .because("a runtime layout reads and writes the cache through CacheStore, like any other user, so it gets the"
          + " facade's size limit, pins and damage reports");

  static final ArchRule REMOTE_USES_THE_FACADE = noClasses().that().resideInAPackage("dev.xlac.cache.remote..")
      .should().dependOnClassesThat().resideInAnyPackage(CACHE_INTERNALS)
      .because("the remote tier reads and writes the cache through CacheStore, like any other user, so what it stores"
          + " gets the facade's checks, pins and size limit");

  static final ArchRule ONLY_REMOTE_TOUCHES_S3 = noClasses().that().resideOutsideOfPackage("dev.xlac.cache.remote..")
      .should().dependOnClassesThat().resideInAPackage("software.amazon.awssdk..")
      .because("the S3 client, its requests and exceptions stay inside the remote tier, which owns the one client");

  static final ArchRule ONLY_STORE_TOUCHES_ROCKSDB = noClasses().that().resideOutsideOfPackage("dev.xlac.cache.store..")
      .should().dependOnClassesThat().resideInAPackage("org.rocksdb..")
      .because("RocksDB, its batches and iterators stay behind the store's narrow API");

  private static JavaClasses product;

  @BeforeAll
  static void importMainClasses() {
    product = ProductClasses.all();
  }

  @Test
  void theImport_seesEveryCachePackage() {
    for (String pkg : List.of("cache", "cache.store", "cache.ops", "cache.bundle", "cache.layout", "cache.remote", "cli")) {
      assertThat(product.stream().filter(c -> c.getPackageName().equals("dev.xlac." + pkg))).as(pkg).isNotEmpty();
    }
  }

  @Test
  void nothingOutsideTheCache_usesItsInternalPackages() {
    NOTHING_OUTSIDE_USES_INTERNALS.check(product);
  }

  @Test
  void theStore_usesNeitherTheFacadeNorOpsBundlesOrLayouts() {
    STORE_DOES_NOT_CALL_UP.check(product);
  }

  @Test
  void onlyTheStore_touchesRocksDb() {
    ONLY_STORE_TOUCHES_ROCKSDB.check(product);
  }

  @Test
  void layouts_useOnlyTheFacade() {
    LAYOUTS_USE_THE_FACADE.check(product);
  }

  @Test
  void theRemoteTier_usesOnlyTheFacade_andAloneTalksToS3() {
    REMOTE_USES_THE_FACADE.check(product);
    ONLY_REMOTE_TOUCHES_S3.check(product);
  }

  @Test
  void eachRule_reportsAClassThatBreaksIt() {
    assertThatThrownBy(() -> ONLY_REMOTE_TOUCHES_S3.check(new ClassFileImporter().importClasses(TalksToS3.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(TalksToS3.class.getName());
    assertThatThrownBy(() -> REMOTE_USES_THE_FACADE.check(
        new ClassFileImporter().importClasses(ReachesTheStore.class, Store.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(ReachesTheStore.class.getName());
    // This test class names Store: from outside the cache, that is reaching past the facade.
    assertThatThrownBy(() -> NOTHING_OUTSIDE_USES_INTERNALS.check(
        new ClassFileImporter().importClasses(CacheRulesTest.class, Store.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(CacheRulesTest.class.getName());
    // A store-side class calling up into the facade.
    assertThatThrownBy(() -> STORE_DOES_NOT_CALL_UP.check(
        new ClassFileImporter().importClasses(CallsUp.class, CacheStore.class)))
        .isInstanceOf(AssertionError.class).hasMessageContaining(CallsUp.class.getName());
    // A layout-side class naming the store and a RocksDB type.
    JavaClasses reachesPast = new ClassFileImporter().importClasses(ReachesPast.class, Store.class);
    assertThatThrownBy(() -> LAYOUTS_USE_THE_FACADE.check(reachesPast))
        .isInstanceOf(AssertionError.class).hasMessageContaining(ReachesPast.class.getName());
    assertThatThrownBy(() -> ONLY_STORE_TOUCHES_ROCKSDB.check(reachesPast))
        .isInstanceOf(AssertionError.class).hasMessageContaining("org.rocksdb.RocksDB");
  }
}
