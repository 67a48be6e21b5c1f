export { decideSourcePeer } from './rules.js';
