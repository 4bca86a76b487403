// hls.js's light build has the same API as the full one; its package
// names types only for the full build.
declare module "hls.js/light" {
  export * from "hls.js";
  export { default } from "hls.js";
}
