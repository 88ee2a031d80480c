import { defineConfig } from "vite";

// `npm run build` writes dist/, which the tute server serves on its HTTP port
// (`tute-server --web-dir clients/web/dist`; `make web` does both). `npm run dev` proxies the
// API to a server on localhost:8080.
export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
  server: { proxy: { "/tute.v1.TuteService": "http://localhost:8080" } },
});
