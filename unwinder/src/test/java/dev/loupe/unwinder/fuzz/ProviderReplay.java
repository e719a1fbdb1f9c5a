package dev.loupe.unwinder.fuzz;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Jazzer's own FuzzedDataProvider over a kept input, in a JVM without Jazzer's agent: its implementation needs
 * classes from the runtime jar Jazzer's agent puts on the boot class path (nested in Jazzer's jar), so it is loaded
 * here with that jar by a loader of its own (the provider interface stays the application's, which targets take).
 * The same bytes give a target the same values as under Jazzer.
 */
final class ProviderReplay {
    private static Method withJavaData;

    private ProviderReplay() {}

    /** A provider over {@code data}; close it after the run. */
    static synchronized FuzzedDataProvider over(byte[] data) throws Exception {
        if (withJavaData == null) {
            ClassLoader app = ProviderReplay.class.getClassLoader();
            String impl = "com.code_intelligence.jazzer.driver.FuzzedDataProviderImpl";
            URL jazzer = Class.forName(impl, false, app).getProtectionDomain().getCodeSource().getLocation();
            Path runtime = Files.createTempFile("jazzer-bootstrap", ".jar");
            runtime.toFile().deleteOnExit();
            try (InputStream in = app.getResourceAsStream("com/code_intelligence/jazzer/runtime/jazzer_bootstrap.jar")) {
                if (in == null) {
                    throw new IOException("Jazzer's runtime jar is not in " + jazzer);
                }
                Files.copy(in, runtime, StandardCopyOption.REPLACE_EXISTING);
            }
            ClassLoader loader = new ChildFirst(new URL[] {jazzer, runtime.toUri().toURL()}, app);
            withJavaData = Class.forName(impl, true, loader).getMethod("withJavaData", byte[].class);
        }
        return (FuzzedDataProvider) withJavaData.invoke(null, (Object) data);
    }

    /** Jazzer's classes from its own jars, but its API (the interface targets see) from the application. */
    private static final class ChildFirst extends URLClassLoader {
        ChildFirst(URL[] urls, ClassLoader parent) {
            super(urls, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("com.code_intelligence.jazzer.") || name.startsWith("com.code_intelligence.jazzer.api.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try {
                        c = findClass(name);
                    } catch (ClassNotFoundException notOurs) {
                        c = super.loadClass(name, false);
                    }
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }
}
