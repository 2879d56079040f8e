// CSS files imported for their side effect: esbuild bundles them into the stylesheet.
declare module '*.css';
