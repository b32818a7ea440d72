/** The differentiable functions, torch.nn.functional style: `import { F } from 'qkv'`. */
import './methods.ts'; // x.add(y), loss.backward(): method forms of these functions
export * from './functional.ts';
