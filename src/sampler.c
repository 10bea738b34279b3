/* placeholder: sampler */
